import PostgresNIO

/// Why ``ReplicationSlots`` could not list or drop a slot.
///
/// ```swift
/// do {
///     try await slots.drop("dbwatch_node1")
/// } catch let error as ReplicationSlotError where error.code == .slotActive {
///     // its replica still runs: stop it first
/// }
/// ```
public struct ReplicationSlotError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of error; match it in `catch` clauses.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as in `ReplicationSlotError.Code.slotActive`.
        public let name: String

        /// The name is not a DBWatch replica's (`dbwatch_` and 1 to 40
        /// characters among `a-z`, `0-9` and `_`): DBWatch drops only the
        /// slots its replicas create.
        public static let notReplicaSlot = Code(name: "notReplicaSlot")
        /// No slot has that name.
        public static let slotNotFound = Code(name: "slotNotFound")
        /// A session reads the slot (its replica runs): stop it first.
        public static let slotActive = Code(name: "slotActive")
        /// The slot decodes another database than the client's: PostgreSQL
        /// drops a logical slot, and its publication, only from its own
        /// database.
        public static let otherDatabase = Code(name: "otherDatabase")
        /// PostgreSQL could not be reached, or refused the request.
        public static let sourceFailed = Code(name: "sourceFailed")

        public var description: String { name }
    }

    /// The kind of error.
    public var code: Code
    /// The slot concerned, if any.
    public var slot: String?
    /// What happened, for people.
    public var message: String

    /// An error of the given kind.
    public init(_ code: Code, slot: String? = nil, _ message: String) {
        self.code = code
        self.slot = slot
        self.message = message
    }

    /// `slots <code>: <message>`.
    public var description: String { "slots \(code): \(message)" }

    /// A failure of PostgreSQL or of the connection to it, in words: the
    /// server's message and SQLSTATE, or the connection's error (a
    /// `PSQLError`'s own description hides both).
    static func sourceFailed(_ error: any Error, slot: String? = nil, doing what: String) -> ReplicationSlotError {
        ReplicationSlotError(.sourceFailed, slot: slot, "\(what) failed: \(describe(error))")
    }

    /// The server's message and SQLSTATE of a `PSQLError`, or its code and
    /// underlying error.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return String(describing: error) }
        if let info = error.serverInfo, let message = info[.message] {
            return message + (info[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        return error.underlying.map { "\(error.code): \($0)" } ?? "\(error.code)"
    }

    /// The SQLSTATE of a server error, if `error` is one.
    static func sqlState(of error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }
}
