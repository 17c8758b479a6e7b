/// The refetches that one commit (or one finished batch) starts, run
/// together on one connection in one read transaction.
///
/// In WAL mode a connection discards its whole page cache when it starts a
/// read transaction after another connection committed. Ten observations
/// of a table fetched in ten transactions read its pages ten times; in one
/// transaction they read them once, and wake one reader instead of ten.
///
/// Every fetch of the batch sees the same snapshot, and knows its
/// **position**: the serial of the last commit it holds. The batch reads
/// the serial, takes the snapshot, and keeps it only when no commit of this
/// process became visible meanwhile without being numbered (see
/// ``CommitGate``); so a value never holds a commit of this process after
/// its position. A commit published after the position that touches a
/// fetch's region makes the driver fetch again (see
/// ``ObservationCenter/fetchDidFinish(_:region:failed:startSerial:)``).
///
/// The center creates and queues batches; a batch calls its drivers, and
/// reaches back up only through its ``ObservationCenter/Uplink``.
final class FetchBatch: ConnectionJob {
    private let drivers: [any ObservationDriving]
    private let uplink: ObservationCenter.Uplink

    /// A snapshot taken while a commit was between becoming visible and
    /// being numbered: the batch ends it and takes another.
    private struct SnapshotRaced: Error {}

    /// After this many raced snapshots in a row (a writer committing
    /// without pause), a batch takes its snapshots while holding the writer
    /// at the gate (``CommitGate/holdingWriters(_:)``), until one is exact.
    static let maximumSnapshotAttempts = 16

    init(drivers: [any ObservationDriving], uplink: ObservationCenter.Uplink) {
        self.drivers = drivers
        self.uplink = uplink
    }

    func run(on database: Database) {
        var again: [any ObservationDriving] = []
        var fetched = 0
        var attempts = 0
        while fetched < drivers.count {
            var serial = uplink.commitSerial
            do {
                try database.inReadOnlyTransaction {
                    attempts += 1
                    if attempts < Self.maximumSnapshotAttempts {
                        try takeSnapshot(on: database, serial: serial)
                    } else {
                        guard let held = try takeSnapshotHoldingWriters(on: database) else { throw SnapshotRaced() }
                        serial = held
                    }
                    // A fetch whose error made SQLite roll the transaction
                    // back (an I/O error, a full disk) ends it: the next
                    // fetches run in a new one, never statement by statement.
                    while fetched < drivers.count, database.isInsideTransaction {
                        let driver = drivers[fetched]
                        fetched += 1
                        if driver.fetch(on: database, position: serial) { again.append(driver) }
                    }
                }
                attempts = 0
            } catch is SnapshotRaced {
                uplink.commitGate.waitUntilClear()
            } catch {
                // `BEGIN` or the snapshot failed: the remaining fetches did
                // not run. (A fetch's own error went to its driver.)
                again += drivers[fetched...].filter { $0.fetchFailed(error, startSerial: serial) }
                fetched = drivers.count
            }
        }
        // Those that missed a commit meanwhile fetch again, together.
        uplink.enqueueFetches(of: again)
    }

    /// Starts the read transaction's snapshot (a deferred transaction takes
    /// it at its first read), then checks that it holds exactly the commits
    /// up to `serial`: none was in the gate, and none was published since.
    private func takeSnapshot(on database: Database, serial: UInt64) throws {
        try startSnapshot(on: database)
        if !uplink.commitGate.isClear || uplink.commitSerial != serial { throw SnapshotRaced() }
    }

    /// Starts the read transaction's snapshot while the writer waits at the
    /// gate; returns the serial it holds, or `nil` when the gate could not
    /// ensure it (see ``CommitGate/holdingWriters(_:)``).
    private func takeSnapshotHoldingWriters(on database: Database) throws -> UInt64? {
        try uplink.commitGate.holdingWriters {
            let serial = uplink.commitSerial
            try startSnapshot(on: database)
            return serial
        }
    }

    private func startSnapshot(on database: Database) throws {
        try database.withoutRecordingReads {
            try database.execute(sql: "PRAGMA schema_version")
        }
    }

    func fail(with error: any Error) {
        let again = drivers.filter { $0.fetchFailed(error, startSerial: .max) }
        uplink.enqueueFetches(of: again)
    }
}
