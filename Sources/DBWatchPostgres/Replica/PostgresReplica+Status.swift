import Foundation

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
        /// Connections to PostgreSQL lost and retried since `run()` started.
        public var reconnects = 0
        /// The epoch of the replica's commit positions for the sync
        /// protocol, `pg-SYSTEMID-TIMELINE`: the source cluster's system
        /// identifier and timeline (PostgreSQL's `IDENTIFY_SYSTEM`), the same
        /// on every replica of one source; `nil` until the replica first
        /// streams. Each commit of the replica is published at the log
        /// position after the last source transaction it applies (the
        /// position ``appliedPosition`` reports), so two replicas of one
        /// source number the same state alike; give it to the server
        /// (`LiveQueriesConfiguration.syncEpoch`) so that a client moves
        /// between them without a snapshot.
        ///
        /// ```swift
        /// replica.status.positionEpoch   // "pg-7312964518237470722-1"
        /// ```
        public var positionEpoch: String?
        /// When the replica last knew it had applied all of PostgreSQL's log
        /// (`nil` before that): the start of the lag that grows while
        /// PostgreSQL cannot be reached.
        public var caughtUpAt: Date?
        /// Whether the replica reached PostgreSQL's end of log since its
        /// connection was last lost (false after each loss until then).
        public var caughtUpSinceConnecting = false

        /// How far behind PostgreSQL the replica is at `now`, in seconds:
        /// ``lagSeconds`` while streaming, connected and caught up since
        /// connecting; otherwise the time since it was last caught up
        /// (``caughtUpAt``), which grows while PostgreSQL cannot be reached
        /// and until the replica caught up again. ``lagSeconds`` before it
        /// first caught up.
        ///
        /// ```swift
        /// replica.status.lag()   // 0 when caught up; 12.5 twelve seconds after PostgreSQL stopped
        /// ```
        public func lag(at now: Date = Date()) -> Double {
            if phase == .streaming, isConnected, caughtUpSinceConnecting { return lagSeconds }
            guard let caughtUpAt else { return lagSeconds }
            return max(lagSeconds, now.timeIntervalSince(caughtUpAt))
        }

        /// Why the replica should not take traffic, or `nil` when it is
        /// streaming, connected and at most `maxLag` seconds behind: the
        /// condition of a `/readyz`.
        ///
        /// ```swift
        /// live.addHealthRoutes(to: router) { replica.status.unreadiness(maxLag: 5) }
        /// ```
        public func unreadiness(maxLag: Double, at now: Date = Date()) -> String? {
            guard phase == .streaming else { return "the replica is \(phase.rawValue), not streaming" }
            guard isConnected else { return "the replica lost PostgreSQL" }
            guard caughtUpSinceConnecting else { return "the replica has not caught up with PostgreSQL yet" }
            let lag = lag(at: now)
            guard lag <= maxLag else {
                return "the replica is \((lag * 10).rounded() / 10) s behind PostgreSQL (at most \(maxLag) s allowed)"
            }
            return nil
        }
    }
}
