/// The refetches that one commit (or one finished batch) starts, run
/// together on one connection in one read transaction.
///
/// In WAL mode a connection discards its whole page cache when it starts a
/// read transaction after another connection committed. Ten observations
/// of a table fetched in ten transactions read its pages ten times; in one
/// transaction they read them once, and wake one reader instead of ten.
///
/// Every fetch of the batch sees the same snapshot, taken after
/// `startSerial` was read: a commit published after that serial that
/// touches a fetch's region makes the driver fetch again (see
/// ``ObservationCenter/fetchDidFinish(_:region:failed:startSerial:)``).
///
/// The center creates and queues batches; a batch calls its drivers, and
/// reaches back up only through its ``ObservationCenter/Uplink``.
final class FetchBatch: ConnectionJob {
    private let drivers: [any ObservationDriving]
    private let uplink: ObservationCenter.Uplink

    init(drivers: [any ObservationDriving], uplink: ObservationCenter.Uplink) {
        self.drivers = drivers
        self.uplink = uplink
    }

    func run(on database: Database) {
        let startSerial = uplink.commitSerial
        var again: [any ObservationDriving] = []
        var fetched = 0
        while fetched < drivers.count {
            do {
                try database.inReadOnlyTransaction {
                    // A fetch whose error made SQLite roll the transaction
                    // back (an I/O error, a full disk) ends it: the next
                    // fetches run in a new one, never statement by statement.
                    while fetched < drivers.count, database.isInsideTransaction {
                        let driver = drivers[fetched]
                        fetched += 1
                        if driver.fetch(on: database, startSerial: startSerial) { again.append(driver) }
                    }
                }
            } catch {
                // `BEGIN` failed: the remaining fetches did not run. (A
                // fetch's own error went to its driver.)
                again += drivers[fetched...].filter { $0.fetchFailed(error, startSerial: startSerial) }
                fetched = drivers.count
            }
        }
        // Those that missed a commit meanwhile fetch again, together.
        uplink.enqueueFetches(of: again)
    }

    func fail(with error: any Error) {
        let again = drivers.filter { $0.fetchFailed(error, startSerial: .max) }
        uplink.enqueueFetches(of: again)
    }
}
