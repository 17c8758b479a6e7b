import Logging
import Synchronization

/// Runs one observed request: fetches it on a reader (never holding the
/// writer), one fetch in flight and at most one pending, and delivers each
/// new result to its subscribers. Identical requests share one driver.
///
/// The center and a ``FetchBatch`` call it through ``ObservationDriving``;
/// it calls its subscribers' mailboxes, and reaches back up only through
/// its ``ObservationCenter/Uplink``.
final class ObservationDriver<Request: Queryable>: ObservationDriving {
    private struct State {
        /// Usually one: an array costs less memory than a dictionary.
        var subscribers: [ResultMailbox<Request.Value>] = []
        /// The last delivered result, for deduplication and late subscribers.
        var lastResult: Result<Request.Value, any Error>?
        var isFetching = false
        var needsFetch = false
        /// Its fetches, deliveries and notifications, counted as they
        /// happen under this lock; the center, which knows the commits and
        /// the region, fills in the rest when asked (see
        /// ``ObservationCenter/statistics(for:)``).
        var statistics = ObservationStatistics()
        /// Rate limit: when the next fetch may start, and whether a timer waits for it.
        var nextFetchAllowedAt: Duration?
        var timerScheduled = false
        /// The timer's task: stopping or closing cancels it, so that it does
        /// not keep the driver (and its last value) until the interval ends.
        var timer: Task<Void, Never>?
        var isStopped = false
        /// The database closed: every subscriber ends with its error. A
        /// flag, not the error: idle observations must stay small.
        var isClosed = false
        /// The fetch running now: the last subscriber leaving, or the
        /// database closing, cancels it (interrupting its statement).
        var runningFetch: AccessCancellation?
        /// How many of the last fetches in a row took ``slowFetch`` or
        /// more (at most 2). From two on, the next fetch runs in a batch of
        /// its own, so that it delays no other observation. (One slow fetch
        /// is not enough: a thread preempted once, or a connection's first
        /// fetch, is not a slow request.)
        var slowFetchStreak: UInt8 = 0
    }

    /// How long a fetch may take and still share a batch (see ``FetchBatch``).
    static var slowFetch: Duration { .milliseconds(2) }

    let request: Request
    private let options: ObservationOptions
    private let uplink: ObservationCenter.Uplink
    private let state = Locked(State())
    private let deduplicate: @Sendable (Request.Value, Request.Value) -> Bool

    init(request: Request, options: ObservationOptions, center: ObservationCenter) {
        self.request = request
        self.options = options
        self.uplink = center.uplink
        self.deduplicate = valueComparison(for: Request.Value.self)
    }

    /// The key identical requests share this driver under; `nil` for a
    /// rate-limited observation, which runs alone.
    var sharingKey: SharingKey? { Self.sharingKey(for: request, options: options) }

    static func sharingKey(for request: Request, options: ObservationOptions) -> SharingKey? {
        options.rateLimit == nil ? SharingKey(request) : nil
    }

    // MARK: - Subscribers

    /// Adds a subscriber. It receives the current value at once when the
    /// driver holds one that no commit has outdated; otherwise the result of
    /// the fetch in flight or the next one. Returns `false`, adding
    /// nothing, when the driver stopped meanwhile (its last subscriber
    /// left): the caller then asks the center again.
    func add(_ mailbox: ResultMailbox<Request.Value>, startFetch: Bool) -> Bool {
        // Results are handed to mailboxes under the lock, so a mailbox never
        // receives an older result after a newer one ("Order", see
        // <doc:ObservationPromises>).
        var isStopped = false
        var wakeup: ResultMailbox<Request.Value>.Wakeup?
        let isClosed = state.withLock { state -> Bool in
            if state.isStopped {
                isStopped = true
                return false
            }
            state.subscribers.append(mailbox)
            uplink.subscribersDidChange(by: 1)
            if state.isClosed {
                wakeup = mailbox.finishWakingLater(after: .failure(SQLiteError.databaseClosed))
                return true
            }
            if startFetch {
                state.isFetching = true
            } else if !state.isFetching, !state.needsFetch, let lastResult = state.lastResult {
                wakeup = mailbox.offerWakingLater(lastResult)
            }
            return false
        }
        wakeup?.resume()
        if isStopped { return false }
        if startFetch && !isClosed { enqueueFetch() }
        return true
    }

    var isStopped: Bool { state.withLock { $0.isStopped } }

    /// The database closed: each subscriber receives
    /// ``SQLiteError/databaseClosed`` (unless it was the last result it got)
    /// and then the end; later subscribers too.
    func endBecauseDatabaseClosed() {
        let error = SQLiteError.databaseClosed
        var timer: Task<Void, Never>?
        let wakeups = state.withLock { state -> [ResultMailbox<Request.Value>.Wakeup] in
            guard !state.isClosed else { return [] }
            state.isClosed = true
            state.runningFetch?.cancel()
            timer = state.timer.take()
            let delivered = isSame(.failure(error), state.lastResult)
            return state.subscribers.compactMap { subscriber in
                subscriber.finishWakingLater(after: delivered && subscriber.hasReceived ? nil : .failure(error))
            }
        }
        timer?.cancel()
        for wakeup in wakeups { wakeup.resume() }
    }

    /// Removes a subscriber; the last one stops the driver.
    func remove(_ id: ObjectIdentifier) {
        var timer: Task<Void, Never>?
        let isLast = state.withLock { state -> Bool in
            let count = state.subscribers.count
            state.subscribers.removeAll { ObjectIdentifier($0) == id }
            if state.subscribers.count < count { uplink.subscribersDidChange(by: -1) }
            if state.subscribers.isEmpty && !state.isStopped {
                state.isStopped = true
                // Nobody waits for its result ("Cancellation releases
                // everything", see <doc:ObservationPromises>).
                state.runningFetch?.cancel()
                timer = state.timer.take()
                return true
            }
            return false
        }
        timer?.cancel()
        if isLast { uplink.remove(self) }
    }

    /// Its counters: fetches, values delivered and commits notified (the
    /// center adds the commits skipped and the region).
    var statistics: ObservationStatistics { state.withLock { $0.statistics } }

    func deliver(_ error: any Error) {
        log(.failed(error))
        let wakeups = state.withLock { state -> [ResultMailbox<Request.Value>.Wakeup] in
            state.lastResult = .failure(error)
            state.statistics.valuesDelivered += 1
            return state.subscribers.compactMap { $0.offerWakingLater(.failure(error)) }
        }
        for wakeup in wakeups { wakeup.resume() }
    }

    // MARK: - Fetching

    func commitDidTouchRegion() -> Bool {
        let (start, sleepUntil) = state.withLock { state -> (Bool, Duration?) in
            state.statistics.changesNotified += 1
            guard !state.isStopped, !state.isClosed else { return (false, nil) }
            if state.isFetching {
                state.needsFetch = true
                return (false, nil)
            }
            if let limit = options.rateLimit, let allowed = state.nextFetchAllowedAt, limit.elapsed() < allowed {
                state.needsFetch = true
                if state.timerScheduled { return (false, nil) }
                state.timerScheduled = true
                return (false, allowed)
            }
            state.isFetching = true
            return (true, nil)
        }
        if let sleepUntil, let limit = options.rateLimit { scheduleTimer(until: sleepUntil, limit: limit) }
        return start
    }

    private func scheduleTimer(until offset: Duration, limit: ObservationOptions.RateLimit) {
        // Created under the lock, so that it is stored before it can run.
        state.withLock { locked in
            guard !locked.isStopped, !locked.isClosed else { return }
            locked.timer = Task { [self] in
                try? await limit.sleepUntil(offset)
                let start = state.withLock { state -> Bool in
                    state.timerScheduled = false
                    state.timer = nil
                    guard state.needsFetch, !state.isFetching, !state.isStopped, !state.isClosed else {
                        return false
                    }
                    state.needsFetch = false
                    state.isFetching = true
                    return true
                }
                if start { enqueueFetch() }
            }
        }
    }

    private func enqueueFetch() {
        uplink.enqueueFetches(of: [self])
    }

    /// Runs on a reader connection (or the queue's connection), in the read
    /// transaction of a ``FetchBatch``.
    func fetch(on db: Database, startSerial: UInt64) -> Bool {
        let cancellation = AccessCancellation()
        let isWanted = state.withLock { state -> Bool in
            guard !state.isStopped, !state.isClosed else { return false }
            state.runningFetch = cancellation
            return true
        }
        guard isWanted else {
            return fetchDidFinish(.failure(CancellationError()), region: DatabaseRegion(), startSerial: .max)
        }
        let start = ContinuousClock.now
        let (result, region) = db.recordingRegion {
            try cancellation.run(on: db) { db in try request.fetch(db) }
        }
        let isSlow = start.duration(to: .now) >= Self.slowFetch
        return fetchDidFinish(result, region: region, startSerial: startSerial, isSlow: isSlow)
    }

    var fetchesAlone: Bool { state.withLock { $0.slowFetchStreak >= 2 } }

    func fetchFailed(_ error: any Error, startSerial: UInt64) -> Bool {
        fetchDidFinish(.failure(error), region: DatabaseRegion(), startSerial: startSerial)
    }

    /// Delivers a fetch's result; returns whether to fetch again at once.
    private func fetchDidFinish(
        _ result: Result<Request.Value, any Error>, region: DatabaseRegion, startSerial: UInt64, isSlow: Bool = false
    ) -> Bool {
        let failed = if case .failure = result { true } else { false }
        let missedCommit = uplink.fetchDidFinish(self, region: region, failed: failed, startSerial: startSerial)
        var timerOffset: Duration?
        var wakeups: [ResultMailbox<Request.Value>.Wakeup] = []
        var transition: LogTransition?
        let startAnother = state.withLock { state -> Bool in
            state.runningFetch = nil
            state.statistics.fetches += 1
            state.slowFetchStreak = isSlow ? min(state.slowFetchStreak + 1, 2) : 0
            state.isFetching = false
            // After the database closed, subscribers only get its error.
            guard !state.isClosed else { return false }
            if missedCommit { state.needsFetch = true }
            let changed = !isSame(result, state.lastResult)
            if changed && !state.isStopped { transition = Self.logTransition(from: state.lastResult, to: result) }
            // Handed under the lock: once `isFetching` is false, a commit can
            // start another fetch whose newer result must not be overwritten
            // by this one on its way to the mailboxes. Consumers are woken
            // after the lock is released.
            for subscriber in state.subscribers where changed || !subscriber.hasReceived {
                if let wakeup = subscriber.offerWakingLater(result) { wakeups.append(wakeup) }
            }
            if changed {
                state.lastResult = result
                state.statistics.valuesDelivered += 1
            }
            if let limit = options.rateLimit, changed {
                state.nextFetchAllowedAt = limit.elapsed() + limit.interval
            }
            guard state.needsFetch, !state.isStopped else { return false }
            if let limit = options.rateLimit, let allowed = state.nextFetchAllowedAt, limit.elapsed() < allowed {
                if !state.timerScheduled {
                    state.timerScheduled = true
                    timerOffset = allowed
                }
                return false
            }
            state.needsFetch = false
            state.isFetching = true
            return true
        }
        for wakeup in wakeups { wakeup.resume() }
        if let transition { log(transition) }
        if let timerOffset, let limit = options.rateLimit { scheduleTimer(until: timerOffset, limit: limit) }
        return startAnother
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
            return deduplicate(value, old)
        case (.failure(let error), .failure(let old)?):
            return String(describing: error) == String(describing: old)
        default:
            return false
        }
    }
}
