import Synchronization

/// The server-side counterpart of GRDBQuery's `@Query`: keeps one
/// observation of a request running, holds its latest value and error, and
/// fans each new value out to any number of subscribers. The request can
/// change (a new search string, a new limit) without subscribers
/// re-subscribing. Many subscribers cost one fetch per change.
///
/// `run()` does the work; start it in a task group or a service, and cancel
/// it to stop:
///
/// ```swift
/// let leaderboard = LiveQuery(TopPlayers(limit: 10), in: pool)
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { await leaderboard.run() }
///     group.addTask {
///         for await players in leaderboard.values {   // the current value at once, then updates
///             broadcast(players)
///         }
///     }
///     leaderboard.request = TopPlayers(limit: 20)    // subscribers keep their loop
/// }
/// ```
public final class LiveQuery<Request: Queryable>: Sendable {
    private struct State {
        var request: Request
        var generation = 0
        var value: Request.Value
        var error: (any Error)?
        var current: Task<Void, Never>?
        /// `run()` ended: new subscribers get the current value, then the end.
        var hasEnded = false
        /// A `run()` is observing; another call waits for it instead.
        var isRunning = false
        var subscribers: [ObjectIdentifier: ObservationSubscription<Request.Value>] = [:]
    }

    private let state: Locked<State>
    private let observe: @Sendable (Request) -> QueryObservation<Request>
    /// Whether two values are equal (never, when `Value` is not `Equatable`):
    /// an equal value is not delivered again, as in an observation.
    private let deduplicate: @Sendable (Request.Value, Request.Value) -> Bool

    /// Creates a live query. Nothing runs until ``run()``.
    ///
    /// - Parameters:
    ///   - request: the initial request.
    ///   - database: the queue or pool to observe.
    ///
    /// ```swift
    /// let leaderboard = LiveQuery(TopPlayers(limit: 10), in: pool)   // nothing runs until run()
    /// ```
    public init(_ request: Request, in database: some DatabaseWriter) {
        state = Locked(State(request: request, value: Request.defaultValue))
        observe = { [database] request in database.observe(request) }
        deduplicate = valueComparison(for: Request.Value.self)
    }

    /// Ends the subscribers' loops, as when ``run()`` ends: nothing could
    /// wake them any more (a live query that goes away before its `run()`
    /// started still has subscribers).
    deinit {
        let wakeups = state.withLock { state in
            state.subscribers.values.compactMap { $0.finishWakingLater(after: nil) }
        }
        for wakeup in wakeups { wakeup.resume() }
    }

    /// The observed request. Setting it refetches with the new request; the
    /// subscribers receive its values without re-subscribing.
    ///
    /// ```swift
    /// leaderboard.request = TopPlayers(limit: 20)   // subscribers keep their loop
    /// ```
    public var request: Request {
        get { state.withLock { $0.request } }
        set {
            let current = state.withLock { state -> Task<Void, Never>? in
                guard state.request != newValue else { return nil }
                state.request = newValue
                state.generation += 1
                return state.current
            }
            current?.cancel()
        }
    }

    /// The latest fetched value; `Request.defaultValue` until a fetch succeeds.
    ///
    /// ```swift
    /// let players = leaderboard.value   // [] until the first fetch succeeds
    /// ```
    public var value: Request.Value { state.withLock { $0.value } }

    /// The error of the latest fetch, or `nil` once a fetch succeeds again.
    ///
    /// ```swift
    /// if let error = leaderboard.error { logger.warning("leaderboard: \(error)") }
    /// ```
    public var error: (any Error)? { state.withLock { $0.error } }

    /// Keeps the observation running until the calling task is cancelled or
    /// the database closes (then ``error`` is "database is closed"). When it
    /// returns, the subscribers' loops end.
    ///
    /// A call made while another runs observes nothing itself (it counts as
    /// one subscriber meanwhile): it returns when the running one does, or
    /// when its own task is cancelled, which leaves the running one alone.
    ///
    /// ```swift
    /// let task = Task { await liveQuery.run() }
    /// // …
    /// task.cancel()
    /// ```
    public func run() async {
        let isFirst = state.withLock { state -> Bool in
            guard !state.isRunning else { return false }
            state.isRunning = true
            state.hasEnded = false
            return true
        }
        guard isFirst else {
            // A subscriber that ignores the values: its loop ends with the
            // running call, or with this task's cancellation.
            for await _ in values {}
            return
        }
        await withTaskCancellationHandler {
            while !Task.isCancelled {
                let (request, generation) = state.withLock { ($0.request, $0.generation) }
                let observation = observe(request)
                let task = Task { [self] in
                    for await result in observation.results {
                        receive(result, generation: generation)
                    }
                }
                let stale = state.withLock { state -> Bool in
                    state.current = task
                    return state.generation != generation
                }
                if stale || Task.isCancelled { task.cancel() }
                await task.value
                // Neither a new request nor cancellation ended it: the
                // database closed, and observing again would end at once.
                let requestChanged = state.withLock { $0.generation != generation }
                if !requestChanged && !Task.isCancelled { break }
            }
            let wakeups = state.withLock { state -> [ObservationSubscription<Request.Value>.Wakeup] in
                state.hasEnded = true
                state.isRunning = false
                defer { state.subscribers = [:] }
                return state.subscribers.values.compactMap { $0.finishWakingLater(after: nil) }
            }
            for wakeup in wakeups { wakeup.resume() }
        } onCancel: {
            state.withLock { $0.current }?.cancel()
        }
    }

    private func receive(_ result: Result<Request.Value, any Error>, generation: Int) {
        let wakeups = state.withLock { state -> [ObservationSubscription<Request.Value>.Wakeup] in
            guard state.generation == generation else { return [] }
            switch result {
            case .success(let value):
                let isSame = deduplicate(value, state.value)
                state.value = value
                state.error = nil
                // Handed under the lock, so that a subscriber joining now
                // never receives an older value after this one; woken after.
                if isSame { return [] }
                return state.subscribers.values.compactMap { $0.offerWakingLater(.success(value)) }
            case .failure(let error):
                state.error = error
                return []
            }
        }
        for wakeup in wakeups { wakeup.resume() }
    }

    /// The current value at once, then each new value. A slow subscriber
    /// receives the newest value when it asks again. The sequence ends when
    /// ``run()`` ends, when the consuming task is cancelled, or when the
    /// live query goes away (an iterator does not keep it alive); subscribing
    /// after `run()` ended gives the last value, then the end.
    ///
    /// ```swift
    /// for await players in leaderboard.values { broadcast(players) }
    /// ```
    public var values: Values { Values(liveQuery: self) }

    fileprivate func subscribe() -> QueryObservation<Request>.Subscription {
        let mailbox = ObservationSubscription<Request.Value> { [weak self] id in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        // Nobody waits on a new mailbox yet: nothing to wake.
        state.withLock { state in
            if state.hasEnded {
                mailbox.finish(after: .success(state.value))
            } else {
                state.subscribers[ObjectIdentifier(mailbox)] = mailbox
                mailbox.offer(.success(state.value))
            }
        }
        return QueryObservation<Request>.Subscription(mailbox: mailbox)
    }

    /// The number of subscribers of ``values``.
    ///
    /// ```swift
    /// leaderboard.subscriberCount   // 0 until a loop iterates leaderboard.values
    /// ```
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// The values of a ``LiveQuery``: see ``LiveQuery/values``.
    ///
    /// ```swift
    /// for await players in leaderboard.values { broadcast(players) }
    /// ```
    public struct Values: AsyncSequence, Sendable {
        /// A fetched value.
        ///
        /// ```swift
        /// for await players in leaderboard.values { … }   // players: [Player], TopPlayers.Value
        /// ```
        public typealias Element = Request.Value
        /// Never fails: errors are in ``LiveQuery/error``.
        ///
        /// ```swift
        /// for await players in leaderboard.values { … }   // no `try`: errors are in leaderboard.error
        /// ```
        public typealias Failure = Never

        let liveQuery: LiveQuery

        /// Subscribes.
        ///
        /// ```swift
        /// var iterator = leaderboard.values.makeAsyncIterator()
        /// let current = await iterator.next()   // the current value at once
        /// ```
        public func makeAsyncIterator() -> Iterator {
            Iterator(subscription: liveQuery.subscribe())
        }

        /// Iterates values until cancelled or until the live query stops.
        ///
        /// ```swift
        /// var iterator = leaderboard.values.makeAsyncIterator()
        /// while let players = await iterator.next() { broadcast(players) }   // ends when run() returns
        /// ```
        public struct Iterator: AsyncIteratorProtocol {
            let subscription: QueryObservation<Request>.Subscription

            /// The next value; `nil` at the end.
            public mutating func next() async -> Request.Value? {
                guard case .success(let value)? = await subscription.mailbox.next() else { return nil }
                return value
            }
        }
    }
}

@available(*, unavailable, message: "an iterator belongs to one consuming task")
extension LiveQuery.Values.Iterator: Sendable {}
