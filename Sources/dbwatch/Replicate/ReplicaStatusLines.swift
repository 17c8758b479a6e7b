import DBWatchPostgres

/// The lines `replicate` prints on standard error as its replica's status
/// changes: each phase it enters (read every 100 ms: a phase shorter than
/// that may go unsaid), each error it retries, and getting connected again
/// after one.
///
/// ```swift
/// ReplicaStatusLines.lines(from: before, to: ReplicaStatusLines.Snapshot(replica.status))
/// // ["dbwatch: replica streaming from slot dbwatch_node1 at 0/16B3748"]
/// ```
enum ReplicaStatusLines {
    /// What the lines say of a replica's status.
    struct Snapshot: Sendable, Equatable {
        /// The stage the replica is in.
        var phase: PostgresReplica.Status.Phase = .idle
        /// Whether its last exchange with PostgreSQL succeeded.
        var isConnected = false
        /// Its slot, once known.
        var slotName: String?
        /// The position up to which it applied every transaction.
        var appliedPosition: LogSequenceNumber?
        /// Its last error, retried or fatal.
        var lastError: ReplicaError?

        /// The snapshot of a replica's status.
        init(_ status: PostgresReplica.Status) {
            phase = status.phase
            isConnected = status.isConnected
            slotName = status.slotName
            appliedPosition = status.appliedPosition
            lastError = status.lastError
        }

        /// A snapshot of the given parts (a replica not started yet by default).
        init(
            phase: PostgresReplica.Status.Phase = .idle, isConnected: Bool = false, slotName: String? = nil,
            appliedPosition: LogSequenceNumber? = nil, lastError: ReplicaError? = nil
        ) {
            self.phase = phase
            self.isConnected = isConnected
            self.slotName = slotName
            self.appliedPosition = appliedPosition
            self.lastError = lastError
        }
    }

    /// The last line, once the replica stopped after a signal.
    static func stopped(_ status: Snapshot) -> String {
        CellText.sanitized(
            "dbwatch: replica stopped" + (status.slotName.map { "; its slot \($0) is kept for the next run" } ?? ""))
    }

    /// What changed from `old` to `new`, one line each, without newlines.
    static func lines(from old: Snapshot, to new: Snapshot) -> [String] {
        var lines: [String] = []
        if new.phase != old.phase, let line = line(entering: new) { lines.append(line) }
        if let error = new.lastError, error != old.lastError, error.isRetried {
            lines.append("dbwatch: replica error, retrying: \(error.message)")
        }
        if new.isConnected, !old.isConnected, old.lastError?.isRetried == true {
            lines.append("dbwatch: replica connected again")
        }
        return lines.map(CellText.sanitized)
    }

    /// The line for a phase entered, or `nil` (the end, stopped or failed,
    /// is the command's own last message).
    private static func line(entering status: Snapshot) -> String? {
        switch status.phase {
        case .idle, .stopped, .failed: return nil
        case .starting: return "dbwatch: replica starting"
        case .copying: return "dbwatch: replica copying the tables"
        case .streaming:
            let slot = status.slotName.map { " from slot \($0)" } ?? ""
            let position = status.appliedPosition.map { " at \($0)" } ?? ""
            return "dbwatch: replica streaming\(slot)\(position)"
        }
    }
}
