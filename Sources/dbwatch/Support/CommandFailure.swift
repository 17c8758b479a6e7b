/// A failure found by `dbwatch` itself (not by SQLite), with the words for
/// standard error and the exit status.
///
/// ```swift
/// throw CommandFailure(.unavailable, "no such file: \(path)")
/// ```
struct CommandFailure: Error, CustomStringConvertible, Sendable {
    /// How the process exits.
    let status: ExitStatus
    /// What went wrong, in one sentence.
    let message: String

    /// Creates a failure.
    ///
    /// - Parameters:
    ///   - status: the exit status.
    ///   - message: what went wrong.
    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    /// The message.
    var description: String { message }
}
