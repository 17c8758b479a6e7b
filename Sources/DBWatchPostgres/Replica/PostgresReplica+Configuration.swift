extension PostgresReplica {
    /// What a replica copies and how it follows the source.
    ///
    /// ```swift
    /// var configuration = PostgresReplica.Configuration(tables: ["player", "team"])
    /// configuration.rowsPerCopyTransaction = 10_000
    /// ```
    public struct Configuration: Sendable {
        /// The tables to replicate, as `name` (schema `public`) or
        /// `schema.name`. When ``publication`` is `nil`, the replica creates
        /// a publication of these tables (named like its slot) and drops it
        /// with the slot in ``PostgresReplica/remove()``.
        public var tables: [String]

        /// An existing publication to follow instead of creating one: every
        /// table it publishes is replicated, and ``tables`` must be empty.
        public var publication: String?

        /// Rows per SQLite transaction during the initial copy. Default: 5,000.
        public var rowsPerCopyTransaction: Int = 5_000

        /// How long a query of the catalog, or a silence of the replication
        /// connection, may last before the replica takes the connection for
        /// dead, closes it and reconnects (a peer that vanished does not
        /// always close its TCP connection; a live PostgreSQL answers the
        /// replica's keepalive requests, sent after a third of this
        /// silence). The initial copy's reading of a table is not limited.
        /// Default: 30 s.
        public var queryTimeout: Duration = .seconds(30)

        /// The first wait after a failure to reach PostgreSQL; it doubles
        /// after each failure in a row, up to ``maximumRetryDelay``. Default:
        /// 100 ms.
        public var initialRetryDelay: Duration = .milliseconds(100)

        /// The longest wait between two attempts. Default: 1 s, so the
        /// replica streams again about a second after PostgreSQL is back.
        public var maximumRetryDelay: Duration = .seconds(1)

        /// A replica of the given tables, in a publication the replica
        /// creates.
        public init(tables: [String]) {
            self.tables = tables
        }

        /// A replica of every table an existing publication publishes.
        public init(publication: String) {
            self.tables = []
            self.publication = publication
        }
    }
}
