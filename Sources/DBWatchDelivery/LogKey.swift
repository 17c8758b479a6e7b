import Logging

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
    /// The path of a refused request (without its query string, which may
    /// hold a token).
    package static let path = "dbwatch.path"
    /// The address of a refused request's client, where the server knows it.
    package static let client = "dbwatch.client"
}

extension Logger {
    /// Logs a request refused before any live query ran (a bad token, a
    /// foreign `Host`, an unknown path): one line at debug level, as every
    /// refusal of the live queries, with `LogKey.status`,
    /// `LogKey.reason` and, when given, `LogKey.path` and `LogKey.client`.
    /// The path and reason are cut to 200 printable ASCII characters.
    package func requestRefused(status: Int, reason: String, path: String?, client: String? = nil) {
        debug(
            "Request refused",
            metadata: Self.refusalMetadata(status: status, reason: reason, path: path, client: client))
    }

    private static func refusalMetadata(status: Int, reason: String, path: String?, client: String?) -> Metadata {
        var metadata: Metadata = [LogKey.status: "\(status)", LogKey.reason: "\(printable(reason))"]
        if let path { metadata[LogKey.path] = "\(printable(path))" }
        if let client { metadata[LogKey.client] = "\(client)" }
        return metadata
    }

    /// At most 200 characters of what a client sent, control characters
    /// and non-ASCII as `?`: a log line cannot be forged or flooded.
    private static func printable(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.prefix(200).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
    }
}
