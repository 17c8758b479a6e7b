import DBWatch

/// How ``LiveQueries`` delivers values: keep-alives, slow clients, shutdown.
///
/// ```swift
/// var configuration = LiveQueriesConfiguration()
/// configuration.keepAliveInterval = .seconds(30)   // behind a proxy with a 60 s idle timeout
/// let live = LiveQueries(pool, configuration: configuration)
/// ```
public struct LiveQueriesConfiguration: Sendable {
    /// The interval between keep-alive comments on an idle server-sent
    /// events stream, so that proxies keep it open. 15 s by default.
    ///
    /// ```swift
    /// configuration.keepAliveInterval = .seconds(15)
    /// ```
    public var keepAliveInterval: Duration = .seconds(15)

    /// How long a write to one client may block (the client reads nothing)
    /// before that client is disconnected. 30 s by default.
    ///
    /// A write blocks only once the connection's buffers are full: the
    /// kernel's send buffer (megabytes per connection unless limited) and
    /// NIO's 64 KiB. With small events that can take minutes, and each such
    /// client pins that much kernel memory meanwhile. Serve through
    /// `ConnectionLimits` (DBWatchHummingbird) (a small send buffer, and
    /// `unsentDataTimeout` set to this value) so that a
    /// client whose connection takes no bytes for this long is dropped
    /// whatever the size of events.
    ///
    /// ```swift
    /// configuration.stalledClientTimeout = .seconds(10)
    /// ```
    public var stalledClientTimeout: Duration = .seconds(30)

    /// On graceful shutdown, how long a write in progress may take before
    /// its client is disconnected without its final event. 1 s by default.
    ///
    /// ```swift
    /// configuration.shutdownWriteGrace = .milliseconds(500)
    /// ```
    public var shutdownWriteGrace: Duration = .seconds(1)

    /// Whether the live queries close the database when they stop, after
    /// graceful shutdown. True by default.
    ///
    /// ```swift
    /// configuration.closesDatabaseOnShutdown = false   // the app closes it itself
    /// ```
    public var closesDatabaseOnShutdown = true

    /// The `Retry-After` value, in seconds, of a 503 answer to a busy or
    /// locked database. 1 by default.
    ///
    /// ```swift
    /// configuration.retryAfterSeconds = 2
    /// ```
    public var retryAfterSeconds = 1

    /// The most shared observations at once: distinct requests (and scopes)
    /// observed for streaming clients. Each refetches after every commit that
    /// can change it, so a client looping over parameters (`?n=1`, `?n=2`,
    /// …) would otherwise make the server fetch once per distinct request
    /// per commit. Past it, a request that would start one more observation
    /// is refused with ``LiveQueriesError/tooManyObservations`` (503 with
    /// `Retry-After`; on a WebSocket, an error message and the connection
    /// stays open); streams already open go on, and a request equal to one
    /// already observed still joins it. One-shot answers
    /// (`current(_:context:)`) start no observation and do
    /// not count. 1,000 by default.
    ///
    /// ```swift
    /// configuration.maxObservations = 200
    /// ```
    public var maxObservations = 1_000

    /// How the shared observations fetch. No rate limit by default: a value
    /// after every commit that can change it. For a query shared by many
    /// clients and changed many times a second, a minimum interval bounds
    /// the fetches and fan-outs (a client's first value is never delayed).
    ///
    /// ```swift
    /// configuration.observationOptions = ObservationOptions(minimumInterval: .milliseconds(200))
    /// ```
    public var observationOptions = ObservationOptions()

    /// The bytes of recent changes each shared sync subscription keeps,
    /// so that a client that reconnects with its position, or reads
    /// slowly, receives the changes it missed instead of a snapshot.
    /// Default 1 MiB.
    ///
    /// ```swift
    /// configuration.syncHistoryBytes = 16 << 20   // resume after longer absences
    /// ```
    public var syncHistoryBytes = 1 << 20

    /// How long a shared sync subscription keeps observing, with its
    /// history, after its last client left: a client that reconnects
    /// meanwhile resumes with the changes it missed. Default 2 minutes. A
    /// lingering subscription counts against ``maxObservations`` but never
    /// refuses a subscription: at that limit, the one left the longest ago
    /// stops to make room for a query a client subscribes to. (Not for a
    /// catch-up request: it pushes out only what catch-ups alone observe,
    /// and is refused with `tooManyObservations` otherwise.)
    ///
    /// ```swift
    /// configuration.syncLinger = .seconds(30)
    /// ```
    public var syncLinger: Duration = .seconds(120)

    /// The subscriptions one sync connection may hold. Default 100.
    ///
    /// ```swift
    /// configuration.syncMaxSubscriptions = 20
    /// ```
    public var syncMaxSubscriptions = 100

    /// The epoch of the sync protocol's positions, when the database's
    /// commit positions are shared with other servers: a PostgreSQL
    /// replica's (`PostgresReplica.Status.positionEpoch`, `pg-SYSTEMID-TIMELINE`),
    /// so that a client moves between replicas of one source and resumes.
    /// 1 to 64 letters, digits, `-` or `_`. Default `nil`: an epoch chosen
    /// at random when the server starts (positions are this server's alone).
    ///
    /// ```swift
    /// configuration.syncEpoch = replica.status.positionEpoch
    /// ```
    public var syncEpoch: String?

    /// The default configuration.
    ///
    /// ```swift
    /// let live = LiveQueries(pool, configuration: LiveQueriesConfiguration())
    /// ```
    public init() {}

    /// How often the housekeeping checks clients for keep-alives,
    /// stalls and shutdown grace.
    var housekeepingInterval: Duration {
        let shortest = min(keepAliveInterval, stalledClientTimeout, shutdownWriteGrace)
        return max(shortest / 4, .milliseconds(5))
    }
}
