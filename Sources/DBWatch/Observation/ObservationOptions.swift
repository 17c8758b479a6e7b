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
    /// coalesced into one fetch. The first value is never delayed.
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
    struct RateLimit: Sendable {
        let interval: Duration
        /// Time elapsed on the clock since the limit was created.
        let elapsed: @Sendable () -> Duration
        /// Sleeps until `elapsed()` reaches the given offset.
        let sleepUntil: @Sendable (Duration) async throws -> Void

        init<C: Clock>(interval: Duration, clock: C) where C.Duration == Duration {
            let start = clock.now
            self.interval = interval
            self.elapsed = { start.duration(to: clock.now) }
            self.sleepUntil = { offset in try await clock.sleep(until: start.advanced(by: offset), tolerance: nil) }
        }
    }
}
