import Logging
import Synchronization

/// Runs one observed request: fetches it on a reader (never holding the
/// writer), one fetch in flight and at most one pending, and delivers each
/// new result to its subscribers. Equal requests with equal options (rate
/// limit included) share one driver.
///
/// Its states and transitions are ``ObservationDriverStateMachine``; this
/// class runs them under its lock and does what they return outside it
/// (wakes consumers, queues fetches, starts and cancels the rate limit's
/// timer, logs). The center and a ``FetchBatch`` call it through
/// ``ObservationDriving``; it calls its subscribers' mailboxes, and reaches
/// back up only through its ``ObservationCenter/Uplink``.
final class ObservationDriver<Request: Queryable>: ObservationDriving, ResultMailboxOwner, PositionReporting {
    /// The timer of the rate limit is a task: stopping or closing cancels
    /// it, so that it does not keep the driver (and its last value) until
    /// the interval ends.
    private typealias StateMachine = ObservationDriverStateMachine<ResultMailbox<Request.Value>, Task<Void, Never>>

    /// How long a fetch may take and still share a batch (see ``FetchBatch``).
    /// From two slow fetches in a row on, the next fetch runs in a batch of
    /// its own, so that it delays no other observation. (One slow fetch is
    /// not enough: a thread preempted once, or a connection's first fetch,
    /// is not a slow request.)
    static var slowFetch: Duration { .milliseconds(2) }

    let request: Request
    private let options: ObservationOptions
    private let uplink: ObservationCenter.Uplink
    let touchedMark = TouchedMark()
    /// Where each fetch's duration is counted: its database's counters.
    private let fetchDurations: DurationHistogramCounters
    private let state = Locked(StateMachine())
    /// Whether `Request.Value` is `Equatable` (known at run time): then a
    /// refetch equal to the last value is not delivered again. A flag, not
    /// a comparison closure, whose context every driver would allocate.
    private let valuesAreEquatable: Bool

    init(request: Request, options: ObservationOptions, center: ObservationCenter) {
        self.request = request
        self.options = options
        self.uplink = center.uplink
        self.fetchDurations = center.fetchQueue.fetchDurations
        self.valuesAreEquatable = Request.Value.self is any Equatable.Type
    }

    /// The key equal requests with equal options share this driver under.
    var sharingKey: DriverSharingKey? { DriverSharingKey(request, options: options) }

    // MARK: - Subscribers

    /// Adds a subscriber. It receives the current value at once when the
    /// driver holds one that no commit has outdated; otherwise the result of
    /// the fetch in flight or of one started now (never delayed by the rate
    /// limit). Returns `false`, adding nothing, when the driver stopped
    /// meanwhile (its last subscriber left): the caller then asks the
    /// center again.
    func add(_ mailbox: ResultMailbox<Request.Value>, startFetch: Bool) -> Bool {
        // Results are handed to mailboxes under the lock, so a mailbox never
        // receives an older result after a newer one ("Order", see
        // <doc:ObservationPromises>).
        guard let action = state.withLock({ $0.add(mailbox, startFetch: startFetch) }) else { return false }
        uplink.subscribersDidChange(by: 1)
        if run(action) { enqueueFetch() }
        return true
    }

    var isStopped: Bool { state.withLock { $0.isStopped } }

    /// See ``ObservationCenter/firstPossibleChange(of:after:)``.
    func firstPossibleChange(after position: UInt64) -> UInt64 {
        uplink.firstPossibleChange(of: self, after: position)
    }

    /// The database closed: each subscriber receives
    /// ``SQLiteError/databaseClosed`` (unless it was the last result it got)
    /// and then the end; later subscribers too.
    func endBecauseDatabaseClosed() {
        _ = run(state.withLock { $0.close(isSame: isSame) })
    }

    /// Removes a subscriber; the last one stops the driver (nobody waits for
    /// its fetch: "Cancellation releases everything", see
    /// <doc:ObservationPromises>).
    func remove(_ id: ObjectIdentifier) {
        let (removed, action) = state.withLock { $0.remove(id) }
        if removed { uplink.subscribersDidChange(by: -1) }
        _ = run(action)
    }

    /// Its counters: fetches, values delivered and commits notified (the
    /// center adds the commits skipped and the region).
    var statistics: ObservationStatistics { state.withLock { $0.statistics } }

    func deliver(_ error: any Error) {
        log(.failed(error))
        _ = run(state.withLock { $0.deliver(error) })
    }

    // MARK: - Fetching

    func commitDidTouchRegion() -> Bool {
        let rateLimit = rateLimitReading()
        return run(state.withLock { $0.commitDidTouchRegion(rateLimit: rateLimit) })
    }

    /// Does what a transition returned, outside the lock; returns whether
    /// to fetch (the caller queues it, or a batch runs it again).
    private func run(_ action: StateMachine.Action) -> Bool {
        for wakeup in action.wakeups { wakeup.resume() }
        action.cancelFetch?.cancel()
        action.cancelTimer?.cancel()
        if let timer = action.startTimer, let limit = options.rateLimit {
            startTimer(token: timer.token, until: timer.until, limit: limit)
        }
        if action.stopped { uplink.remove(self) }
        return action.fetch
    }

    private func rateLimitReading() -> StateMachine.RateLimitReading? {
        options.rateLimit.map { StateMachine.RateLimitReading(now: $0.elapsed(), interval: $0.interval) }
    }

    private func startTimer(token: UInt32, until offset: Duration, limit: ObservationOptions.RateLimit) {
        let timer = Task { [self] in
            try? await limit.sleepUntil(offset)
            guard !Task.isCancelled else { return }
            if run(state.withLock({ $0.timerFired(token) })) { enqueueFetch() }
        }
        if let stale = state.withLock({ $0.timerStarted(timer, token: token) }) { stale.cancel() }
    }

    private func enqueueFetch() {
        uplink.enqueueFetches(of: [self])
    }

    /// Runs on a reader connection (or the queue's connection), in the read
    /// transaction of a ``FetchBatch``, whose snapshot is at `position`.
    func fetch(on db: Database, position: UInt64) -> Bool {
        let cancellation = AccessCancellation()
        guard state.withLock({ $0.fetchWillRun(cancellation) }) else {
            return fetchDidFinish(.failure(CancellationError()), region: DatabaseRegion(), startSerial: .max)
        }
        let start = ContinuousClock.now
        let (result, region) = db.recordingRegion {
            try cancellation.run(on: db) { db in try request.fetch(db) }
        }
        let duration = start.duration(to: .now)
        fetchDurations.record(duration)
        let isSlow = duration >= Self.slowFetch
        return fetchDidFinish(result, region: region, startSerial: position, isSlow: isSlow)
    }

    var fetchesAlone: Bool { state.withLock { $0.fetchesAlone } }

    func fetchFailed(_ error: any Error, startSerial: UInt64) -> Bool {
        fetchDidFinish(.failure(error), region: DatabaseRegion(), startSerial: startSerial)
    }

    /// Delivers a fetch's result, at the position of its snapshot
    /// (`startSerial`; the last published serial when that is unknown, `.max`);
    /// returns whether to fetch again at once.
    private func fetchDidFinish(
        _ result: Result<Request.Value, any Error>, region: DatabaseRegion, startSerial: UInt64, isSlow: Bool = false
    ) -> Bool {
        let failed = if case .failure = result { true } else { false }
        let missedCommit = uplink.fetchDidFinish(self, region: region, failed: failed, startSerial: startSerial)
        let rateLimit = rateLimitReading()
        let position = startSerial == .max ? uplink.commitSerial : startSerial
        // Handed under the lock: once the fetch is over, a commit can start
        // another fetch whose newer result must not be overwritten by this
        // one on its way to the mailboxes.
        let action = state.withLock { state in
            state.fetchDidFinish(
                result, at: position, missedCommit: missedCommit, isSlow: isSlow, rateLimit: rateLimit,
                isSame: isSame)
        }
        let fetchAgain = run(action)
        if let previous = action.replaced, let transition = Self.logTransition(from: previous, to: result) {
            log(transition)
        }
        return fetchAgain
    }

    // MARK: - Logging

    /// A change between failing and succeeding worth a log entry: logged
    /// once per transition (and per new error), not per repeated failure.
    private enum LogTransition {
        case failed(any Error)
        case recovered
    }

    /// What to log when a fetch's result replaces `previous`: a new error,
    /// or the first success after one. A closed database and a cancelled
    /// fetch are not failures of the request.
    private static func logTransition(
        from previous: Result<Request.Value, any Error>?, to result: Result<Request.Value, any Error>
    ) -> LogTransition? {
        switch result {
        case .failure(let error):
            if error is CancellationError || (error as? SQLiteError)?.isDatabaseClosed == true { return nil }
            return .failed(error)
        case .success:
            if case .failure(let error)? = previous, !(error is CancellationError) { return .recovered }
            return nil
        }
    }

    private func log(_ transition: LogTransition) {
        switch transition {
        case .failed(let error):
            uplink.logger.warning("observation of \(String(describing: request)) failed: \(error)")
        case .recovered:
            uplink.logger.info("observation of \(String(describing: request)) recovered")
        }
    }

    private func isSame(_ result: Result<Request.Value, any Error>, _ previous: Result<Request.Value, any Error>?)
        -> Bool
    {
        switch (result, previous) {
        case (.success(let value), .success(let old)?):
            return valuesAreEquatable && valuesAreEqual(value, old)
        case (.failure(let error), .failure(let old)?):
            return String(describing: error) == String(describing: old)
        default:
            return false
        }
    }
}
