/// The values of an observed ``Queryable`` request: the current value at
/// once, then a new value after every commit that can change it.
///
/// ```swift
/// for try await players in pool.observe(TopPlayers()) {
///     leaderboard.update(players.map(\.name))
/// }
/// ```
///
/// - The first element is fetched when iteration starts, from the committed
///   state at that time.
/// - Values arrive in commit order. A consumer that is slow receives the
///   newest value when it asks again: pending values are coalesced, never
///   buffered without bound.
/// - When `Value` is `Equatable`, a refetch that yields the value delivered
///   last is not delivered again.
/// - `for try await` throws the first error and ends; ``results`` delivers
///   errors as values and keeps observing.
/// - Breaking out of the loop or cancelling the task stops the observation.
/// - Closing the database ends it: its last element is the error
///   "database is closed" (thrown, or a `.failure` in ``results``).
///
/// Each iteration is one subscription; identical requests iterated at the
/// same time with equal options (rate limit included) share one fetch per
/// change.
public struct QueryObservation<Request: Queryable>: AsyncSequence, Sendable {
    /// The fetched value.
    ///
    /// ```swift
    /// for try await players in pool.observe(TopPlayers()) { … }   // players: [Player], TopPlayers.Value
    /// ```
    public typealias Element = Request.Value
    /// Fetch errors.
    ///
    /// ```swift
    /// do { for try await players in pool.observe(TopPlayers()) { … } } catch { … }   // the first fetch error
    /// ```
    public typealias Failure = any Error

    let request: Request
    let options: ObservationOptions
    let center: ObservationCenter

    /// The same observation with errors delivered as `.failure` values
    /// instead of ending the sequence: the next change refetches, and a
    /// fixed schema recovers to `.success`. Until a fetch succeeds again,
    /// every commit counts as a change, whatever the failed fetch read (an
    /// error may depend on anything). It ends only when the consumer stops
    /// or the database closes (after a last `.failure`).
    ///
    /// ```swift
    /// for await result in pool.observe(TopPlayers()).results {
    ///     switch result {
    ///     case .success(let players): render(players)
    ///     case .failure(let error): log(error)
    ///     }
    /// }
    /// ```
    public var results: Results { Results(observation: self) }

    /// Starts a subscription: registers it, then fetches the first value.
    ///
    /// ```swift
    /// var iterator = pool.observe(TopPlayers()).makeAsyncIterator()
    /// let players = try await iterator.next()   // the current value
    /// ```
    public func makeAsyncIterator() -> Iterator {
        Iterator(subscription: subscribe())
    }

    func subscribe() -> Subscription {
        subscribe(reportingUnchanged: false).subscription
    }

    /// Starts a subscription whose mailbox is told of unchanged fetches
    /// when `reportingUnchanged` (see ``Positioned``); returns it with its driver.
    func subscribe(reportingUnchanged: Bool) -> (subscription: Subscription, driver: ObservationDriver<Request>) {
        let key = DriverSharingKey(request, options: options)
        while true {
            let (driver, isNew) = center.driver(sharedAs: key) {
                ObservationDriver(request: request, options: options, center: center)
            }
            let mailbox = ResultMailbox<Request.Value>(owner: driver, reportsUnchanged: reportingUnchanged)
            // A driver stopping right now is skipped by the center next time.
            if driver.add(mailbox, startFetch: isNew) { return (Subscription(mailbox: mailbox), driver) }
        }
    }

    /// Owns one subscription; dropping it stops the subscription.
    final class Subscription {
        let mailbox: ResultMailbox<Request.Value>

        init(mailbox: ResultMailbox<Request.Value>) {
            self.mailbox = mailbox
        }

        deinit {
            mailbox.finish()
        }
    }

    /// Iterates the values; throws the first error.
    ///
    /// ```swift
    /// var iterator = pool.observe(TopPlayers()).makeAsyncIterator()
    /// while let players = try await iterator.next() { render(players) }   // throws the first error
    /// ```
    public struct Iterator: AsyncIteratorProtocol {
        let subscription: Subscription
        private var isDone = false

        init(subscription: Subscription) {
            self.subscription = subscription
        }

        /// The next value; `nil` when cancelled. Throws the first fetch error, then ends.
        public mutating func next() async throws -> Request.Value? {
            guard !isDone, let result = await subscription.mailbox.next() else {
                isDone = true
                return nil
            }
            switch result {
            case .success(let value):
                return value
            case .failure(let error):
                isDone = true
                subscription.mailbox.finish()
                throw error
            }
        }
    }

    /// The `Result`-wrapped form of an observation: see ``results``.
    ///
    /// ```swift
    /// for await result in pool.observe(TopPlayers()).results { … }   // Result<[Player], any Error>
    /// ```
    public struct Results: AsyncSequence, Sendable {
        /// A fetched value or the error of a fetch.
        ///
        /// ```swift
        /// for await result in pool.observe(TopPlayers()).results {
        ///     if case .success(let players) = result { render(players) }
        /// }
        /// ```
        public typealias Element = Result<Request.Value, any Error>
        /// Never fails: errors are elements.
        ///
        /// ```swift
        /// for await result in pool.observe(TopPlayers()).results { … }   // no `try`: errors are elements
        /// ```
        public typealias Failure = Never

        let observation: QueryObservation

        /// Starts a subscription.
        ///
        /// ```swift
        /// var iterator = pool.observe(TopPlayers()).results.makeAsyncIterator()
        /// let first = await iterator.next()   // .success(players) or .failure(error)
        /// ```
        public func makeAsyncIterator() -> Iterator {
            Iterator(subscription: observation.subscribe())
        }

        /// Iterates results until cancelled, or until the database closes
        /// (after its last `.failure`).
        ///
        /// ```swift
        /// var iterator = pool.observe(TopPlayers()).results.makeAsyncIterator()
        /// while let result = await iterator.next() { … }   // ends once cancelled or after the database closed
        /// ```
        public struct Iterator: AsyncIteratorProtocol {
            let subscription: Subscription

            /// The next result; `nil` when cancelled or after the database closed.
            public mutating func next() async -> Result<Request.Value, any Error>? {
                await subscription.mailbox.next()
            }

            /// The next result with the position it was fetched at (see
            /// ``PositionedResult``); `nil` when cancelled or after the
            /// database closed. Unlike ``QueryObservation/positioned``, no
            /// element without a result: unchanged fetches are not reported.
            package mutating func nextPositioned() async -> PositionedResult<Request.Value>? {
                await subscription.mailbox.nextPositioned()
            }
        }
    }
}

@available(*, unavailable, message: "an iterator belongs to one consuming task")
extension QueryObservation.Iterator: Sendable {}

@available(*, unavailable, message: "an iterator belongs to one consuming task")
extension QueryObservation.Results.Iterator: Sendable {}
