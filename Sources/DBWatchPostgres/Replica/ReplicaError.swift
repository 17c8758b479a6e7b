/// Why a replica stopped or cannot start, or why a wait failed.
///
/// Errors that make the replica unfaithful stop it (``Code/schemaChanged``,
/// ``Code/tableDropped``, ``Code/unsupportedType``, …): the SQLite tables keep
/// the last state applied, and observations keep serving it, but no change
/// is applied until the cause is fixed and the replica is started again.
/// A source that cannot be reached is not fatal: the replica retries, and
/// the error shows in ``PostgresReplica/Status/lastError``.
///
/// ```swift
/// do {
///     try await replica.run()
/// } catch let error as ReplicaError where error.code == .schemaChanged {
///     logger.critical("\(error)")
/// }
/// ```
public struct ReplicaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of error; match it in `catch` clauses.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as in `ReplicaError.Code.schemaChanged`.
        public let name: String

        /// A replicated table's columns or primary key changed in
        /// PostgreSQL (`ALTER TABLE`). Fatal.
        public static let schemaChanged = Code(name: "schemaChanged")
        /// A replicated table was dropped or renamed in PostgreSQL. Fatal.
        public static let tableDropped = Code(name: "tableDropped")
        /// A column's type has no mapping to SQLite (see the type mapping
        /// in the documentation). Fatal.
        public static let unsupportedType = Code(name: "unsupportedType")
        /// A value the mapping cannot store faithfully (a float `NaN`, an
        /// infinite timestamp). Fatal.
        public static let unsupportedValue = Code(name: "unsupportedValue")
        /// A table has no primary key, or a replica identity that is
        /// neither its primary key nor FULL (`REPLICA IDENTITY USING INDEX`
        /// or `NOTHING`), so its updates and deletes cannot name their row.
        /// Fatal.
        public static let noPrimaryKey = Code(name: "noPrimaryKey")
        /// A configured table or publication does not exist. Fatal.
        public static let tableNotFound = Code(name: "tableNotFound")
        /// The replica's slot is gone from PostgreSQL (dropped by hand, or
        /// invalidated): changes were lost, so the replica cannot continue.
        /// Fatal; remove the replica's file and copy again.
        public static let slotMissing = Code(name: "slotMissing")
        /// The SQLite file is a replica of other tables, another
        /// publication or another PostgreSQL cluster than configured. Fatal.
        public static let differentSource = Code(name: "differentSource")
        /// PostgreSQL cannot decode its log (`wal_level` is not `logical`)
        /// or refuses to create a slot or publication. Fatal.
        public static let sourceNotReady = Code(name: "sourceNotReady")
        /// The configuration is wrong (no table, a bad table name, tables
        /// and a publication both given). Fatal.
        public static let invalidConfiguration = Code(name: "invalidConfiguration")
        /// PostgreSQL could not be reached or closed the connection. Not
        /// fatal: the replica retries with backoff.
        public static let sourceUnreachable = Code(name: "sourceUnreachable")
        /// The replica's SQLite database refused a write (disk full, an
        /// I/O error, a read-only file, a trigger of its own): the
        /// transaction is not applied, and the file keeps the last state
        /// applied. Fatal: fix the cause and run the replica again; it goes
        /// on from the last transaction it applied.
        public static let databaseFailed = Code(name: "databaseFailed")
        /// The change feed sent something the replica cannot read. Fatal.
        public static let unreadableChange = Code(name: "unreadableChange")
        /// ``PostgresReplica/waitUntilApplied(_:timeout:)`` gave up.
        public static let timedOut = Code(name: "timedOut")
        /// The replica stopped (it failed, or it was shut down) before it
        /// reached the position waited for.
        public static let stopped = Code(name: "stopped")
        /// ``PostgresReplica/remove()`` was called while the replica runs.
        public static let stillRunning = Code(name: "stillRunning")

        public var description: String { name }
    }

    /// The kind of error.
    public var code: Code
    /// The PostgreSQL table concerned, `schema.name`, if any.
    public var table: String?
    /// The column concerned, if any.
    public var column: String?
    /// What happened, for people.
    public var message: String

    /// An error of the given kind.
    public init(_ code: Code, table: String? = nil, column: String? = nil, _ message: String) {
        self.code = code
        self.table = table
        self.column = column
        self.message = message
    }

    /// Whether the replica retries after this error instead of stopping.
    public var isRetried: Bool { code == .sourceUnreachable }

    /// `replica <code>: <message>`.
    public var description: String { "replica \(code): \(message)" }
}
