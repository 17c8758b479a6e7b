/// A running observation as the center and its batches see it: the calls
/// that go down to a driver (``ObservationDriver``, or a stub in tests).
protocol ObservationDriving: AnyObject, Sendable {
    /// A commit touched the observation's region: counts it (see
    /// ``ObservationStatistics/changesNotified``) and returns whether to
    /// fetch now; `false` when a fetch is in flight (it will fetch again) or
    /// the rate limit delays it.
    func commitDidTouchRegion() -> Bool
    /// Runs one fetch (in a ``FetchBatch``'s read transaction, whose
    /// snapshot holds the commits up to `position`) and delivers its result
    /// at that position. Returns whether the driver must fetch again at
    /// once (a commit it may not have seen touched its region).
    func fetch(on database: Database, position: UInt64) -> Bool
    /// The fetch could not run (its read transaction could not begin, no
    /// connection, or the queue closed); `startSerial` is the serial read
    /// before it tried, `.max` when unknown. Returns whether the driver must
    /// fetch again at once.
    func fetchFailed(_ error: any Error, startSerial: UInt64) -> Bool
    /// Its last fetches were slow: the next one runs in a batch of its own.
    var fetchesAlone: Bool { get }
    /// The database file was replaced: deliver the error.
    func deliver(_ error: any Error)
    /// The database closed: end every subscriber with
    /// ``SQLiteError/databaseClosed``.
    func endBecauseDatabaseClosed()
    /// The key the driver is shared under, if any.
    var sharingKey: DriverSharingKey? { get }
    /// Its last subscriber left: it takes no new one, and is being removed.
    var isStopped: Bool { get }
    /// Where its center records the last commit that touched its region.
    var touchedMark: TouchedMark { get }
}
