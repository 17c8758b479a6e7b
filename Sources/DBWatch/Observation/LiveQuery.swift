import Synchronization

/// The server-side counterpart of GRDBQuery's `@Query`: keeps one
/// observation of a request, holds its latest value and error, and fans
/// each new value out to any number of subscribers. The request can change
/// (a new search string, a new limit) without subscribers re-subscribing.
/// Many subscribers cost one fetch per change.
///
/// It observes while it has subscribers or while ``run()`` runs, with one
/// observation for all: a subscriber alone starts it, so a forgotten
/// `run()` never leaves subscribers waiting. `run()` keeps it observing
/// without subscribers (the value stays current for ``value``) and bounds
/// its life: when `run()` returns, when ``finish()`` is called or when the
/// database closes, the live query ends and its subscribers' loops end
/// after their last value.
///
/// ```swift
/// let leaderboard = LiveQuery(TopPlayers(limit: 10), in: pool)
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { await leaderboard.run() }
///     group.addTask {
///         for await players in leaderboard.values {   // the first fetched value, then updates
///             broadcast(players)
///         }
///     }
///     leaderboard.request = TopPlayers(limit: 20)    // subscribers keep their loop
/// }
/// ```
///
/// A subscriber never receives ``Queryable/defaultValue`` as if it were
/// fetched: its first value is one fetched for the current request by the
/// running observation, at once when there is one, else after the next
/// fetch. ``values`` skips errors (a subscriber keeps the last good value
/// while fetches fail); ``results`` delivers them.
public final class LiveQuery<Request: Queryable>: Sendable {
    /// The position of every result a live query hands its subscribers:
    /// they consume values, not positions (``PositionedResult``), and its
    /// request can change between two results.
    static var noPosition: UInt64 { 0 }

    struct Subscriber {
        let mailbox: ResultMailbox<Request.Value>
        /// A subscriber of ``results``: it receives errors too.
        let receivesErrors: Bool
    }

    struct State {
        var request: Request
        /// The latest fetched value; `Request.defaultValue` before any.
        var value: Request.Value
        var hasFetched = false
        var error: (any Error)?
        /// The latest result of the running observation for the current
        /// request; `nil` until it has one (it just started, or the request
        /// changed). What a new subscriber receives at once.
        var current: Result<Request.Value, any Error>?
        /// The running observation fetched a value for the current request:
        /// `value` is that value (the latest `.success`, even when `current`
        /// is a later error).
        var currentValueFetched = false
        /// The task that consumes the observation, while observing.
        var pump: Task<Void, Never>?
        /// Identifies the pump; results and the end of an older one are ignored.
        var pumpID = 0
        /// The `run()` call that owns the live query while it runs.
        var runner: Int?
        var nextRunID = 0
        /// The `run()` calls waiting for the end (or for their cancellation).
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Counts the ends: a `run()` waits until it changes.
        var endCount = 0
        /// Ended (`run()` returned, ``finish()``, or the database closed):
        /// nothing observes until `run()` is called again.
        var hasEnded = false
        var subscribers: [ObjectIdentifier: Subscriber] = [:]

        /// Whether the live query must observe now.
        var isWanted: Bool { !hasEnded && (runner != nil || !subscribers.isEmpty) }
    }

    /// Not private: tests read real state through it (`@testable`), such
    /// as the `run()` calls waiting in ``State/waiters``.
    let state: Locked<State>
    private let observe: @Sendable (Request) -> QueryObservation<Request>
    /// Whether two values are equal (never, when `Value` is not `Equatable`):
    /// an equal value is not delivered again, as in an observation.
    private let deduplicate: @Sendable (Request.Value, Request.Value) -> Bool

    /// Creates a live query. Nothing runs until a subscriber arrives or
    /// ``run()`` is called.
    ///
    /// - Parameters:
    ///   - request: the initial request.
    ///   - database: the queue or pool to observe.
    ///
    /// ```swift
    /// let leaderboard = LiveQuery(TopPlayers(limit: 10), in: pool)   // nothing runs yet
    /// ```
    public init(_ request: Request, in database: some DatabaseWriter) {
        state = Locked(State(request: request, value: Request.defaultValue))
        observe = { [database] request in database.observe(request) }
        deduplicate = valueComparison(for: Request.Value.self)
    }

    /// Stops observing and ends the subscribers' loops: nothing could wake
    /// them any more (an iterator does not keep the live query alive).
    deinit {
        let (wakeups, pump) = state.withLock { state in
            (
                state.subscribers.values.compactMap { $0.mailbox.finishWakingLater(after: nil, at: Self.noPosition) },
                state.pump
            )
        }
        pump?.cancel()
        for wakeup in wakeups { wakeup.resume() }
    }

    /// The observed request. Setting it refetches with the new request; the
    /// subscribers receive its values without re-subscribing (a value equal
    /// to the one they hold is not delivered again).
    ///
    /// ```swift
    /// leaderboard.request = TopPlayers(limit: 20)   // subscribers keep their loop
    /// ```
    public var request: Request {
        get { state.withLock { $0.request } }
        set {
            let old = state.withLock { state -> Task<Void, Never>? in
                guard state.request != newValue else { return nil }
                state.request = newValue
                guard state.pump != nil else {
                    state.current = nil
                    state.currentValueFetched = false
                    return nil
                }
                let old = stopObservingLocked(&state)
                startObservingLocked(&state)
                return old
            }
            old?.cancel()
        }
    }

    /// The latest fetched value; `Request.defaultValue` until a fetch
    /// succeeds (see ``fetchedValue`` to tell them apart).
    ///
    /// ```swift
    /// let players = leaderboard.value   // [] until the first fetch succeeds
    /// ```
    public var value: Request.Value { state.withLock { $0.value } }

    /// The latest fetched value, or `nil` until a fetch succeeds: never
    /// ``Queryable/defaultValue`` standing for the database's state.
    ///
    /// ```swift
    /// guard let players = leaderboard.fetchedValue else { return .serviceUnavailable }
    /// ```
    public var fetchedValue: Request.Value? { state.withLock { $0.hasFetched ? $0.value : nil } }

    /// The error of the latest fetch, or `nil` once a fetch succeeds again.
    ///
    /// ```swift
    /// if let error = leaderboard.error { logger.warning("leaderboard: \(error)") }
    /// ```
    public var error: (any Error)? { state.withLock { $0.error } }

    // MARK: - Running

    /// Keeps the live query observing, also without subscribers, until the
    /// calling task is cancelled, ``finish()`` is called, or the database
    /// closes (then ``error`` is "database is closed"). When it returns,
    /// the live query has ended: the subscribers' loops end after their
    /// last value, and later subscribers get the last fetched value, then
    /// the end, until `run()` is called again.
    ///
    /// A call made while another runs observes nothing itself: it returns
    /// when the running one does, or when its own task is cancelled, which
    /// leaves the running one alone.
    ///
    /// ```swift
    /// let task = Task { await liveQuery.run() }
    /// // …
    /// task.cancel()   // or liveQuery.finish()
    /// ```
    public func run() async {
        let (id, isOwner, endCount) = state.withLock { state -> (Int, Bool, Int) in
            let id = state.nextRunID
            state.nextRunID += 1
            guard state.runner == nil else { return (id, false, state.endCount) }
            state.runner = id
            state.hasEnded = false
            if state.pump == nil { startObservingLocked(&state) }
            return (id, true, state.endCount)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.endCount != endCount || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
        if isOwner { end(ifRunBy: id) }
    }

    /// Ends the live query now, as when ``run()`` returns: a running
    /// `run()` returns, the observation stops, and the subscribers' loops
    /// end after the value waiting for them. For a graceful shutdown, so
    /// that streams fed by ``values`` or ``results`` end before the server
    /// waits for them. Later subscribers get the last fetched value, then
    /// the end, until `run()` is called again.
    ///
    /// ```swift
    /// leaderboard.finish()   // shutting down: every `for await` loop over it ends
    /// ```
    public func finish() {
        end { _ in true }
    }

    /// Ends the live query if the `run()` call `id` still owns it.
    private func end(ifRunBy id: Int) {
        end { $0.runner == id }
    }

    private func end(if condition: (State) -> Bool) {
        var pump: Task<Void, Never>?
        var wakeups: [ResultMailbox<Request.Value>.Wakeup] = []
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard condition(state) else { return [] }
            state.hasEnded = true
            state.runner = nil
            state.endCount += 1
            if state.pump != nil { pump = stopObservingLocked(&state) }
            wakeups = state.subscribers.values.compactMap {
                $0.mailbox.finishWakingLater(after: nil, at: Self.noPosition)
            }
            state.subscribers = [:]
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        pump?.cancel()
        for wakeup in wakeups { wakeup.resume() }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: - Observing

    /// Starts a pump: a task that subscribes to the observation of the
    /// current request and hands each result to ``receive(_:from:)``.
    /// Created under the lock, so that it is stored before it can run.
    private func startObservingLocked(_ state: inout State) {
        state.pumpID += 1
        state.current = nil
        state.currentValueFetched = false
        let id = state.pumpID
        let observation = observe(state.request)
        // Detached: it serves every subscriber, not the task of the one
        // that happened to start it (no task-local values or priority of its).
        state.pump = Task.detached { [weak self] in
            for await result in observation.results {
                guard let self else { return }
                receive(result, from: id)
            }
            self?.observationDidEnd(id)
        }
    }

    /// Stops the pump (the caller cancels the returned task outside the
    /// lock); its later results are ignored.
    private func stopObservingLocked(_ state: inout State) -> Task<Void, Never>? {
        defer {
            state.pump = nil
            state.pumpID += 1
            state.current = nil
            state.currentValueFetched = false
        }
        return state.pump
    }

    /// The observation of pump `id` ended without being stopped: the
    /// database closed (its last result was the closed error).
    private func observationDidEnd(_ id: Int) {
        end { $0.pumpID == id && $0.pump != nil }
    }

    private func receive(_ result: Result<Request.Value, any Error>, from id: Int) {
        let wakeups = state.withLock { state -> [ResultMailbox<Request.Value>.Wakeup] in
            guard state.pumpID == id else { return [] }
            // Handed under the lock, so that a subscriber joining now never
            // receives an older result after this one; woken after.
            switch result {
            case .success(let value):
                let isSame = state.hasFetched && deduplicate(value, state.value)
                let recovers = state.error != nil
                state.value = value
                state.hasFetched = true
                state.error = nil
                state.current = result
                state.currentValueFetched = true
                return state.subscribers.values.compactMap { subscriber in
                    let isNew = !isSame || (recovers && subscriber.receivesErrors) || !subscriber.mailbox.hasReceived
                    return isNew ? subscriber.mailbox.offerWakingLater(result, at: Self.noPosition) : nil
                }
            case .failure(let error):
                let isSame = state.error.map { String(describing: $0) == String(describing: error) } ?? false
                state.error = error
                state.current = result
                return state.subscribers.values.compactMap { subscriber in
                    guard subscriber.receivesErrors, !isSame || !subscriber.mailbox.hasReceived else { return nil }
                    return subscriber.mailbox.offerWakingLater(result, at: Self.noPosition)
                }
            }
        }
        for wakeup in wakeups { wakeup.resume() }
    }

    // MARK: - Subscribers

    /// The first fetched value for the current request, then each new
    /// value; errors are skipped (see ``results``). A subscriber that joins
    /// while the observation holds a value gets it at once; one that joins
    /// before the first fetch waits for it (and starts the observation if
    /// nothing observes). A slow subscriber receives the newest value when
    /// it asks again. The sequence ends when the live query ends (see
    /// ``run()`` and ``finish()``), when the consuming task is cancelled, or
    /// when the live query goes away (an iterator does not keep it alive);
    /// subscribing after the end gives the last fetched value, if any,
    /// then the end.
    ///
    /// ```swift
    /// for await players in leaderboard.values { broadcast(players) }
    /// ```
    public var values: Values { Values(liveQuery: self) }

    /// The same as ``values`` with errors delivered: `.failure(error)` when
    /// a fetch fails (once per distinct error), then `.success` again when
    /// a fetch succeeds, also with a value equal to the last one. A
    /// subscriber joining gets the latest result at once (a value or an
    /// error), or waits for the first one. When the database closes, the
    /// last element is its error "database is closed".
    ///
    /// ```swift
    /// for await result in leaderboard.results {
    ///     switch result {
    ///     case .success(let players): broadcast(players)
    ///     case .failure(let error): broadcastError(error)
    ///     }
    /// }
    /// ```
    public var results: Results { Results(liveQuery: self) }

    fileprivate func subscribe(receivingErrors: Bool) -> QueryObservation<Request>.Subscription {
        let mailbox = ResultMailbox<Request.Value> { [weak self] id in
            self?.unsubscribe(id)
        }
        // Nobody waits on a new mailbox yet: offering wakes nothing.
        state.withLock { state in
            if state.hasEnded {
                let error = receivingErrors ? state.error : nil
                let last: Result<Request.Value, any Error>? =
                    if let error { .failure(error) } else if state.hasFetched { .success(state.value) } else { nil }
                mailbox.finish(after: last, at: Self.noPosition)
                return
            }
            state.subscribers[ObjectIdentifier(mailbox)] = Subscriber(
                mailbox: mailbox, receivesErrors: receivingErrors)
            if receivingErrors, let current = state.current {
                mailbox.offer(current, at: Self.noPosition)
            } else if state.currentValueFetched {
                mailbox.offer(.success(state.value), at: Self.noPosition)
            }
            if state.pump == nil { startObservingLocked(&state) }
        }
        return QueryObservation<Request>.Subscription(mailbox: mailbox)
    }

    /// A subscriber left: the last one stops the observation unless
    /// ``run()`` runs.
    private func unsubscribe(_ id: ObjectIdentifier) {
        let pump = state.withLock { state -> Task<Void, Never>? in
            guard state.subscribers.removeValue(forKey: id) != nil, !state.isWanted, state.pump != nil else {
                return nil
            }
            return stopObservingLocked(&state)
        }
        pump?.cancel()
    }

    /// The number of subscribers of ``values`` and ``results``.
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
        /// Never fails: errors are in ``LiveQuery/results`` and ``LiveQuery/error``.
        ///
        /// ```swift
        /// for await players in leaderboard.values { … }   // no `try`: errors are in leaderboard.results
        /// ```
        public typealias Failure = Never

        let liveQuery: LiveQuery

        /// Subscribes.
        ///
        /// ```swift
        /// var iterator = leaderboard.values.makeAsyncIterator()
        /// let current = await iterator.next()   // the first fetched value
        /// ```
        public func makeAsyncIterator() -> Iterator {
            Iterator(subscription: liveQuery.subscribe(receivingErrors: false))
        }

        /// Iterates values until cancelled or until the live query ends.
        ///
        /// ```swift
        /// var iterator = leaderboard.values.makeAsyncIterator()
        /// while let players = await iterator.next() { broadcast(players) }   // ends with the live query
        /// ```
        public struct Iterator: AsyncIteratorProtocol {
            let subscription: QueryObservation<Request>.Subscription

            /// The next value; `nil` at the end.
            public mutating func next() async -> Request.Value? {
                while let result = await subscription.mailbox.next() {
                    if case .success(let value) = result { return value }
                }
                return nil
            }
        }
    }

    /// The results of a ``LiveQuery``: see ``LiveQuery/results``.
    ///
    /// ```swift
    /// for await result in leaderboard.results { … }   // Result<[Player], any Error>
    /// ```
    public struct Results: AsyncSequence, Sendable {
        /// A fetched value or the error of a fetch.
        ///
        /// ```swift
        /// for await result in leaderboard.results {
        ///     if case .success(let players) = result { broadcast(players) }
        /// }
        /// ```
        public typealias Element = Result<Request.Value, any Error>
        /// Never fails: errors are elements.
        ///
        /// ```swift
        /// for await result in leaderboard.results { … }   // no `try`: errors are elements
        /// ```
        public typealias Failure = Never

        let liveQuery: LiveQuery

        /// Subscribes.
        ///
        /// ```swift
        /// var iterator = leaderboard.results.makeAsyncIterator()
        /// let first = await iterator.next()   // .success(players) or .failure(error), fetched
        /// ```
        public func makeAsyncIterator() -> Iterator {
            Iterator(subscription: liveQuery.subscribe(receivingErrors: true))
        }

        /// Iterates results until cancelled or until the live query ends.
        ///
        /// ```swift
        /// var iterator = leaderboard.results.makeAsyncIterator()
        /// while let result = await iterator.next() { … }   // ends with the live query
        /// ```
        public struct Iterator: AsyncIteratorProtocol {
            let subscription: QueryObservation<Request>.Subscription

            /// The next result; `nil` at the end.
            public mutating func next() async -> Result<Request.Value, any Error>? {
                await subscription.mailbox.next()
            }
        }
    }
}

@available(*, unavailable, message: "an iterator belongs to one consuming task")
extension LiveQuery.Values.Iterator: Sendable {}

@available(*, unavailable, message: "an iterator belongs to one consuming task")
extension LiveQuery.Results.Iterator: Sendable {}
