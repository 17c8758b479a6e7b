extension PostgresReplica {
    /// What a replica copies and how it follows the source.
    ///
    /// ```swift
    /// var configuration = PostgresReplica.Configuration(tables: ["player", "team"])
    /// configuration.pollInterval = .milliseconds(5)
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

        /// How often the replica asks PostgreSQL whether its log moved while
        /// it is idle. A change is applied at most this long after its
        /// commit, plus the time to decode and apply it. Default: 5 ms; each
        /// poll is one `SELECT pg_current_wal_flush_lsn()`.
        public var pollInterval: Duration = .milliseconds(5)

        /// How many changes one read of the slot returns at most (it always
        /// ends at a transaction's end). Each read makes PostgreSQL decode
        /// its log again from the slot's restart point, so under load fewer,
        /// larger reads cost less: with 1-row transactions, 100,000 applied
        /// a backlog 1.16 times as fast as 10,000 and 5.8 times as fast as
        /// 1,000 (BENCHMARKS.md). The messages of one read are held in
        /// memory (about 35 bytes each for a narrow row). Default: 100,000.
        public var changesPerRead: Int = 100_000

        /// Rows per SQLite transaction during the initial copy. Default: 5,000.
        public var rowsPerCopyTransaction: Int = 5_000

        /// How long one query of the change feed or the catalog may take
        /// before the replica takes the connection for dead, closes it and
        /// retries (a peer that vanished does not always close its TCP
        /// connection). The initial copy's reading of a table is not
        /// limited. Default: 30 s.
        public var queryTimeout: Duration = .seconds(30)

        /// The first wait after a failure to reach PostgreSQL; it doubles
        /// after each failure in a row, up to ``maximumRetryDelay``. Default:
        /// 100 ms.
        public var initialRetryDelay: Duration = .milliseconds(100)

        /// The longest wait between two attempts. Default: 5 s.
        public var maximumRetryDelay: Duration = .seconds(5)

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
