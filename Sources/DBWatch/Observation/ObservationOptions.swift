/// How an observation delivers its values.
///
/// ```swift
/// // During a bulk import, at most one value every half second:
/// let options = ObservationOptions(minimumInterval: .milliseconds(500))
/// for try await players in pool.observe(TopPlayers(), options: options) { … }
/// ```
public struct ObservationOptions: Sendable {
    let rateLimit: RateLimit?

    /// No rate limit: a value after every relevant commit (coalesced while
    /// the consumer is busy).
    ///
    /// ```swift
    /// for try await players in pool.observe(TopPlayers(), options: ObservationOptions()) { … }   // as observe(_:)
    /// ```
    public init() {
        rateLimit = nil
    }

    /// Rate-limited: after a value, the next fetch waits until
    /// `minimumInterval` has passed on `clock`. Changes meanwhile are
    /// coalesced into one fetch. The first value is never delayed, also for
    /// a consumer that joins while a change waits: observations of equal
    /// requests with the same interval and clock share one fetch per change,
    /// and a newcomer gets a value fetched for it at once.
    ///
    /// - Parameters:
    ///   - minimumInterval: the minimum time between two values.
    ///   - clock: the clock to measure it (tests inject a manual clock).
    ///
    /// ```swift
    /// let options = ObservationOptions(minimumInterval: .milliseconds(500))   // at most 2 values a second
    /// ```
    public init<C: Clock>(minimumInterval: Duration, clock: C = ContinuousClock()) where C.Duration == Duration {
        rateLimit = RateLimit(interval: minimumInterval, clock: clock)
    }

    /// A minimum interval between values, measured on an injected clock.
    /// A class: options are stored in every driver, and most have no rate
    /// limit, whose optional reference costs 8 bytes instead of its fields.
    final class RateLimit: Sendable {
        let interval: Duration
        /// Time elapsed on the clock since the limit was created.
        let elapsed: @Sendable () -> Duration
        /// Sleeps until `elapsed()` reaches the given offset.
        let sleepUntil: @Sendable (Duration) async throws -> Void
        /// Equal for equal limits: the same interval on the same clock (see
        /// ``DriverSharingKey``).
        let key: Key

        /// The interval, and the clock: the clock itself when it is
        /// `Hashable`, the instance when it is a class, its type otherwise
        /// (`ContinuousClock`, `SuspendingClock`: every value reads the same time).
        struct Key: Hashable, @unchecked Sendable {  // the clock is Sendable (Clock requires it)
            let interval: Duration
            let clock: AnyHashable

            init<C: Clock>(interval: Duration, clock: C) {
                self.interval = interval
                if let hashable = clock as? any Hashable {
                    self.clock = AnyHashable(hashable)
                } else if C.self is AnyObject.Type {
                    self.clock = AnyHashable(ObjectIdentifier(clock as AnyObject))
                } else {
                    self.clock = AnyHashable(ObjectIdentifier(C.self))
                }
            }
        }

        init<C: Clock>(interval: Duration, clock: C) where C.Duration == Duration {
            let start = clock.now
            self.interval = interval
            self.key = Key(interval: interval, clock: clock)
            self.elapsed = { start.duration(to: clock.now) }
            self.sleepUntil = { offset in try await clock.sleep(until: start.advanced(by: offset), tolerance: nil) }
        }
    }
}
