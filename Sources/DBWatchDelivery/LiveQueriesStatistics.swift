import DBWatch
import Synchronization

/// Counters of a ``LiveQueries``, for metrics and leak checks.
///
/// ```swift
/// let statistics = live.statistics
/// logger.info("\(statistics.clientsConnected) clients, \(statistics.valuesSent) values sent")
/// ```
public struct LiveQueriesStatistics: Sendable, Hashable {
    /// Clients connected now (server-sent events and WebSockets).
    ///
    /// ```swift
    /// gauge.record(live.statistics.clientsConnected)
    /// ```
    public var clientsConnected: Int
    /// Shared observations running now: one per distinct request and scope.
    ///
    /// ```swift
    /// live.statistics.observations   // 1 with 1,000 clients of TopPlayers()
    /// ```
    public var observations: Int
    /// Values written to clients, counted per client.
    ///
    /// ```swift
    /// live.statistics.valuesSent
    /// ```
    public var valuesSent: Int
    /// Error events written to clients, counted per client.
    ///
    /// ```swift
    /// live.statistics.errorsSent
    /// ```
    public var errorsSent: Int
    /// Fetches: results of shared observations, plus one-shot fetches.
    ///
    /// ```swift
    /// live.statistics.fetches   // one per change, whatever the number of clients
    /// ```
    public var fetches: Int
    /// Pending values replaced by a newer one before a slow client took them.
    ///
    /// ```swift
    /// live.statistics.valuesSkipped
    /// ```
    public var valuesSkipped: Int
    /// Clients disconnected because a write made no progress in time.
    ///
    /// ```swift
    /// live.statistics.clientsStalled
    /// ```
    public var clientsStalled: Int
    /// Requests refused because they would have started more than
    /// ``LiveQueriesConfiguration/maxObservations`` shared observations.
    ///
    /// ```swift
    /// live.statistics.observationsRefused
    /// ```
    public var observationsRefused: Int = 0
    /// How long values took from their commit to a client's socket: from
    /// the moment the commit of a value's position (the last commit its
    /// snapshot holds) was published to the moment the adapter's write of
    /// the value to one client returned (the bytes handed to its
    /// connection), one duration per client and value. A sync batch counts
    /// from the earliest commit that changed a value the client held.
    ///
    /// Not counted: a client's first value for a request (also after a
    /// WebSocket client changes its request), a sync subscription's
    /// snapshot, a value whose commit came before the client followed its
    /// request, and a value whose commit is gone from the core's log of
    /// recent commits when the value is fetched (a fetch that outlived over
    /// a hundred commits). A slow client whose pending value was replaced
    /// by a newer one (`valuesSkipped`) counts from the newer value's
    /// commit. Commits of another process count from when this process
    /// detected them, and a replica's from when it applied them (its lag
    /// behind PostgreSQL is `dbwatch_replica_lag_seconds`).
    ///
    /// ```swift
    /// let latency = live.statistics.commitToSocket
    /// let mean = latency.total / max(1, latency.count)
    /// ```
    public var commitToSocket = DurationHistogram()
}

/// The counters behind ``LiveQueriesStatistics``: relaxed atomics, no lock.
package final class LiveQueriesCounters: Sendable {
    package let clientsConnected = Atomic<Int>(0)
    package let valuesSent = Atomic<Int>(0)
    package let errorsSent = Atomic<Int>(0)
    package let fetches = Atomic<Int>(0)
    package let valuesSkipped = Atomic<Int>(0)
    package let clientsStalled = Atomic<Int>(0)
    package let observationsRefused = Atomic<Int>(0)
    package let commitToSocket = DurationHistogramCounters()

    package func sent(_ frame: Frame) {
        switch frame.kind {
        case .value: valuesSent.add(1, ordering: .relaxed)
        case .error: errorsSent.add(1, ordering: .relaxed)
        case .end, .keepAlive: break
        }
    }

    package init() {}

    /// `frame` was just written to a client that follows its source since
    /// `since`: counts its commit-to-socket latency when it is news of a
    /// commit made since.
    package func wrote(_ frame: Frame, since: ContinuousClock.Instant) {
        guard let committedAt = frame.committedAt, committedAt >= since else { return }
        commitToSocket.record(committedAt.duration(to: .now))
    }

    func snapshot(observations: Int) -> LiveQueriesStatistics {
        LiveQueriesStatistics(
            clientsConnected: clientsConnected.load(ordering: .relaxed),
            observations: observations,
            valuesSent: valuesSent.load(ordering: .relaxed),
            errorsSent: errorsSent.load(ordering: .relaxed),
            fetches: fetches.load(ordering: .relaxed),
            valuesSkipped: valuesSkipped.load(ordering: .relaxed),
            clientsStalled: clientsStalled.load(ordering: .relaxed),
            observationsRefused: observationsRefused.load(ordering: .relaxed),
            commitToSocket: commitToSocket.snapshot)
    }
}
