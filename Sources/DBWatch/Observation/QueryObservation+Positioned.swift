extension QueryObservation {
    /// The observation with the position of each result, for the sync
    /// protocol (`DBWatchDelivery`): each element is a result with the
    /// position of the snapshot it was fetched from, or a position alone
    /// when a fetch found the result unchanged (``PositionedResult``).
    /// Errors are elements, as in ``results``.
    ///
    /// What a consumer may rely on:
    /// - Positions of successive elements never decrease.
    /// - A result at position `p` holds every commit of this process up to
    ///   `p` and none after (another process's commit may be in it before
    ///   its number is published).
    /// - ``Positioned/Iterator/probe`` tells until which position the last
    ///   result is the value: the first commit after it that touched what
    ///   the request read.
    package var positioned: Positioned { Positioned(observation: self) }

    /// See ``QueryObservation/positioned``.
    package struct Positioned: AsyncSequence, Sendable {
        package typealias Element = PositionedResult<Request.Value>
        package typealias Failure = Never

        let observation: QueryObservation

        /// Starts a subscription.
        package func makeAsyncIterator() -> Iterator {
            let (subscription, driver) = observation.subscribe(reportingUnchanged: true)
            return Iterator(subscription: subscription, probe: ObservationProbe(driver: driver))
        }

        /// Iterates positioned results until cancelled, or until the
        /// database closes (after its last `.failure`).
        package struct Iterator: AsyncIteratorProtocol {
            let subscription: Subscription
            /// Tells, from any task, until which position this
            /// subscription's last result is the value.
            package let probe: ObservationProbe

            /// The next result or position; `nil` when cancelled or after
            /// the database closed.
            package mutating func next() async -> PositionedResult<Request.Value>? {
                await subscription.mailbox.nextPositioned()
            }
        }
    }
}

/// Tells until which position an observation's result at a position is
/// its value: the first commit after it that touched what its request read
/// (``ObservationCenter/firstPossibleChange(of:after:)``). A batch of the
/// sync protocol is composed at a position where every subscription's
/// value is known: so it is composed while commits go on.
package struct ObservationProbe: Sendable {
    private let driver: any PositionReporting
    /// The driver's ``TouchedMark``: a value delivered at a position no
    /// earlier than its `value` is current (a sync session reads it for
    /// each subscription it holds, without a call to the center).
    package let mark: TouchedMark

    init(driver: some PositionReporting) {
        self.driver = driver
        mark = driver.touchedMark
    }

    /// The first position after `position` at which the result delivered
    /// at `position` may no longer be the value; `.max` while it is the
    /// value now. The result is the value at every position from
    /// `position` up to, not including, this one.
    package func firstPossibleChange(after position: UInt64) -> UInt64 {
        driver.firstPossibleChange(after: position)
    }

    /// Whether the result delivered at `position` is the value now.
    package func isCurrent(at position: UInt64) -> Bool {
        firstPossibleChange(after: position) == .max
    }
}

/// What an ``ObservationProbe`` asks: a driver, through its center.
protocol PositionReporting: AnyObject, Sendable {
    /// See ``ObservationProbe/firstPossibleChange(after:)``.
    func firstPossibleChange(after position: UInt64) -> UInt64
    /// Where its center records the last commit that touched its region.
    var touchedMark: TouchedMark { get }
}

extension DatabaseWriter {
    /// The position of the last commit this process published (see
    /// ``PositionedResult``): where a sync connection stands when it opens.
    package var commitPosition: UInt64 {
        switch self {
        case let pool as DatabasePool: pool.observations.commitSerial
        case let queue as DatabaseQueue: queue.observations.commitSerial
        default: 0
        }
    }

    /// When the commit at `position` was published by this process (see
    /// ``PositionedResult``), while it is in the log of recent commits the
    /// observations keep; `nil` otherwise. The delivery engine measures
    /// from it how long a value took from its commit to a client's socket.
    ///
    /// ```swift
    /// let committedAt = pool.commitInstant(at: positioned.position)
    /// ```
    package func commitInstant(at position: UInt64) -> ContinuousClock.Instant? {
        switch self {
        case let pool as DatabasePool: pool.observations.commitInstant(at: position)
        case let queue as DatabaseQueue: queue.observations.commitInstant(at: position)
        default: nil
        }
    }

    /// Moves ``commitPosition`` forward to `position` without a commit
    /// (never back): a database whose commits carry positions of their own
    /// (``Database/setCommitPosition(_:)``) and that already holds
    /// everything up to `position` starts there, as a replica reopening its
    /// file at its stored log position.
    ///
    /// ```swift
    /// pool.advanceCommitPosition(to: storedPosition)
    /// ```
    package func advanceCommitPosition(to position: UInt64) {
        switch self {
        case let pool as DatabasePool: pool.observations.advanceCommitSerial(to: position)
        case let queue as DatabaseQueue: queue.observations.advanceCommitSerial(to: position)
        default: break
        }
    }
}
