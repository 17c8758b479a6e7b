/// Why a remote query failed: its fetch failed on the server, the server
/// refused it, or the server sent what the client cannot read.
///
/// ```swift
/// do {
///     for try await players in client.values(of: "leaderboard", as: [Player].self) { render(players) }
/// } catch let error as SyncClientError where error.kind == .queryFailed {
///     print(error.message, error.code ?? 0)   // "no such column: score", 1
/// }
/// ```
public struct SyncClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure: a struct of constants, so that kinds may be
    /// added without breaking a `switch`.
    ///
    /// ```swift
    /// if error.kind == .refused { askForAnotherToken() }
    /// ```
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        /// The query's fetch failed on the server (a SQL error, a busy
        /// database): an `error` message of the subscription. The server
        /// keeps the subscription; a later commit that fixes it brings a
        /// value again (``SyncValues/results`` goes on).
        public static let queryFailed = Kind(name: "queryFailed")
        /// The server refused the subscription or the connection: an
        /// unknown query, bad parameters, a missing or wrong token
        /// (``SyncClientError/status`` and ``SyncClientError/reason`` say
        /// which). Final: the subscription ends.
        public static let refused = Kind(name: "refused")
        /// The server sent what the client cannot use: its `sync` endpoint
        /// does not answer with server-sent events. Final. (A value that
        /// does not decode as the sequence's `Value` is the decoder's
        /// `DecodingError`; changes that do not fit the rows held make the
        /// client subscribe again, without an error.)
        public static let badServerMessage = Kind(name: "badServerMessage")

        /// The kind's name, such as `queryFailed`.
        public var description: String { name }
    }

    /// What kind of failure.
    ///
    /// ```swift
    /// error.kind == .queryFailed   // the server keeps the subscription
    /// ```
    public let kind: Kind
    /// The server's message (`{"message": …}`), or the client's.
    ///
    /// ```swift
    /// error.message   // "no such column: score"
    /// ```
    public let message: String
    /// The protocol's reason, when the server gave one: `unknownQuery`,
    /// `badMessage`, `tooManySubscriptions`, `unknownSession`, ….
    ///
    /// ```swift
    /// error.reason == "unknownQuery"
    /// ```
    public let reason: String?
    /// SQLite's (extended) result code, when the server gave one.
    ///
    /// ```swift
    /// error.code   // 1 (SQLITE_ERROR)
    /// ```
    public let code: Int?
    /// The HTTP status of a refused request, if the refusal was an answer.
    ///
    /// ```swift
    /// error.status   // 404
    /// ```
    public let status: Int?

    /// An error of `kind`.
    ///
    /// - Parameters:
    ///   - kind: What kind of failure.
    ///   - message: What went wrong.
    ///   - reason: The protocol's reason, if any.
    ///   - code: SQLite's result code, if any.
    ///   - status: The HTTP status, if any.
    public init(kind: Kind, message: String, reason: String? = nil, code: Int? = nil, status: Int? = nil) {
        self.kind = kind
        self.message = message
        self.reason = reason
        self.code = code
        self.status = status
    }

    /// The kind, the message, and the reason or status when known.
    public var description: String {
        var text = "\(kind): \(message)"
        if let reason { text += " (\(reason))" }
        if let status { text += " [HTTP \(status)]" }
        return text
    }
}
