extension PostgresReplica {
    /// What a replica is doing, read with ``PostgresReplica/status``.
    public struct Status: Sendable, Equatable {
        /// The stage a replica is in.
        public enum Phase: String, Sendable, Equatable {
            /// Not running yet.
            case idle
            /// Connecting, checking the tables, creating the slot.
            case starting
            /// Copying the tables for the first time.
            case copying
            /// Following the change feed.
            case streaming
            /// `run()` returned after a shutdown; the slot is kept.
            case stopped
            /// `run()` threw a fatal error (see ``PostgresReplica/Status/lastError``).
            case failed
        }

        /// The stage the replica is in.
        public var phase: Phase = .idle
        /// Whether the last exchange with PostgreSQL succeeded.
        public var isConnected = false
        /// The replication slot's name (`dbwatch_…`), once known.
        public var slotName: String?
        /// The position up to which every transaction is applied.
        public var appliedPosition: LogSequenceNumber?
        /// The end of PostgreSQL's log when last asked.
        public var sourcePosition: LogSequenceNumber?
        /// How many bytes of log the replica has still to read:
        /// `sourcePosition - appliedPosition`, 0 when caught up.
        public var lagBytes: UInt64 {
            guard let appliedPosition, let sourcePosition, sourcePosition > appliedPosition else { return 0 }
            return sourcePosition.rawValue - appliedPosition.rawValue
        }
        /// How old the newest applied transaction was when it was applied,
        /// in seconds (commit in PostgreSQL to commit in SQLite, clocks of
        /// both machines compared); 0 before the first, and again once the
        /// replica has caught up with PostgreSQL's log.
        public var lagSeconds: Double = 0
        /// The last error, retried or fatal; `nil` after a success following
        /// a retried error.
        public var lastError: ReplicaError?
        /// Transactions applied since `run()` started.
        public var appliedTransactions = 0
        /// Row changes (inserted, updated or deleted rows, truncated tables)
        /// applied since `run()` started.
        public var appliedChanges = 0
    }
}
