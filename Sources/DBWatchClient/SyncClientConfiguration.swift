import Foundation

/// How a ``SyncClient`` reconnects and decides that a connection is dead.
///
/// ```swift
/// var configuration = SyncClientConfiguration()
/// configuration.reconnectDelay = .milliseconds(250)...(.seconds(10))
/// configuration.idleTimeout = .seconds(60)
/// let client = SyncClient(baseURL: url, configuration: configuration)
/// ```
public struct SyncClientConfiguration: Sendable {
    /// The delay before a reconnection: it starts at the range's lower
    /// bound, doubles after each failed attempt up to its upper bound, and
    /// each delay is drawn between half of it and all of it (jitter), so
    /// that clients of a restarted server do not come back at once. A
    /// `hello` resets it. 500 ms to 30 s by default.
    ///
    /// ```swift
    /// configuration.reconnectDelay = .seconds(1)...(.seconds(60))
    /// ```
    public var reconnectDelay: ClosedRange<Duration> = .milliseconds(500)...(.seconds(30))
    /// How long the stream may send nothing, keep-alive comments included
    /// (a server sends one every 15 s by default), before the connection
    /// counts as lost and is reopened; `nil`: never. 45 s by default.
    ///
    /// ```swift
    /// configuration.idleTimeout = nil   // trust TCP alone
    /// ```
    public var idleTimeout: Duration? = .seconds(45)
    /// The clock that measures the reconnection delays (tests inject one
    /// they move by hand).
    public var clock: any Clock<Duration> = ContinuousClock()
    /// The decoder of values: its strategies must match the server's
    /// encoder (DBWatch's adapters use `JSONEncoder`'s defaults).
    public var decoder: JSONDecoder = JSONDecoder()

    /// The default configuration.
    ///
    /// ```swift
    /// let client = SyncClient(baseURL: url, configuration: SyncClientConfiguration())
    /// ```
    public init() {}

    /// The delay before reconnection attempt `attempt` (0 for the first).
    func delay(attempt: Int, random: Double) -> Duration {
        let lower = reconnectDelay.lowerBound
        var ceiling = lower
        for _ in 0..<min(attempt, 40) where ceiling < reconnectDelay.upperBound { ceiling *= 2 }
        ceiling = min(ceiling, reconnectDelay.upperBound)
        return ceiling * (0.5 + random / 2)
    }
}
