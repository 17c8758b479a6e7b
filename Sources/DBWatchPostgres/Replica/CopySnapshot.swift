/// The snapshot the initial copy read its tables in, as
/// `pg_current_snapshot()` gives it: which transactions' changes the copy
/// holds already. The change feed starts at the slot, made before the
/// snapshot, so its first transactions may be among them: they are
/// recognized by their id and skipped, so none is applied twice.
struct CopySnapshot: Sendable, Equatable {
    /// `xmin`: every transaction below it had ended.
    var oldestRunning: UInt64
    /// `xmax`: no transaction from here on had started.
    var firstUnstarted: UInt64
    /// The transactions in between still in progress.
    var inProgress: Set<UInt64>
    /// `pg_current_wal_insert_lsn()` read in the snapshot: every commit the
    /// snapshot sees is before it.
    var position: LogSequenceNumber

    /// The snapshot of `pg_snapshot` text, `xmin:xmax:xip,xip,…`.
    init?(_ text: String, position: LogSequenceNumber) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let oldestRunning = UInt64(parts[0]), let firstUnstarted = UInt64(parts[1]) else {
            return nil
        }
        var inProgress: Set<UInt64> = []
        for id in parts[2].split(separator: ",") {
            guard let id = UInt64(id) else { return nil }
            inProgress.insert(id)
        }
        self.oldestRunning = oldestRunning
        self.firstUnstarted = firstUnstarted
        self.inProgress = inProgress
        self.position = position
    }

    /// `xmin:xmax:xip,xip,…`, as PostgreSQL writes it.
    var text: String {
        "\(oldestRunning):\(firstUnstarted):" + inProgress.sorted().map(String.init).joined(separator: ",")
    }

    /// Whether the snapshot saw the transaction of the change feed whose
    /// (32-bit) id and commit record's position are given.
    func holds(transactionID: UInt32, commitPosition: LogSequenceNumber) -> Bool {
        // A commit after the snapshot's position is after the snapshot;
        // before it, the transaction is near the snapshot in time, so its
        // 32-bit id is the 64-bit id nearest to xmax with those low bits.
        guard commitPosition < position else { return false }
        let offset = Int64(Int32(bitPattern: transactionID &- UInt32(truncatingIfNeeded: firstUnstarted)))
        let id = Int64(bitPattern: firstUnstarted) + offset
        guard id >= 0 else { return false }
        let fullID = UInt64(id)
        return fullID < oldestRunning || (fullID < firstUnstarted && !inProgress.contains(fullID))
    }
}
