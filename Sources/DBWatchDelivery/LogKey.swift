/// The metadata keys of the live queries' log lines, the same in every
/// version, so that a log pipeline can index them (listed in the
/// DBWatchDelivery catalog).
package enum LogKey {
    /// The request's description (a client's query and parameters).
    package static let request = "dbwatch.request"
    /// `sse` or `websocket`.
    package static let transport = "dbwatch.transport"
    /// Why a stream ended or a request was refused.
    package static let reason = "dbwatch.reason"
    /// An error's description.
    package static let error = "dbwatch.error"
    /// The HTTP status of a refused request.
    package static let status = "dbwatch.status"
}
