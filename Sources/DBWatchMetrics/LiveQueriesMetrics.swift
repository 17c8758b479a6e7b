import DBWatch
import DBWatchDelivery
import Metrics
import Synchronization

/// The counters of a `LiveQueries` reported through swift-metrics, under
/// Prometheus-style names (see ``LiveQueriesMetrics/Name``).
///
/// The delivery engine counts with relaxed atomics whether or not anyone
/// reads them; this type reads them (``record()``) and moves the metrics by
/// the difference since its last read. Nothing runs on a value's path, so
/// reporting costs a read of nine counters and the database's fetch
/// durations (`DatabaseWriter.fetchDurations`) per ``record()``,
/// whatever the number of clients. Without a bootstrapped metrics backend
/// swift-metrics' default factory drops every value.
///
/// The fetch durations and the commit-to-socket latency
/// (`LiveQueriesStatistics.commitToSocket`) are swift-metrics `Timer`s:
/// at each ``record()``, the durations counted since the last one are
/// recorded, each bucket's at its mean, so a histogram with the bounds of
/// `DurationHistogram.upperBounds` (give the backend ``timerBuckets``, as
/// `dbwatch serve` does swift-prometheus) counts every duration in its
/// own bucket and sums their real values. A record costs one timer record
/// per fetch and per value written to a client since the last one.
///
/// ```swift
/// let live = LiveQueries(pool)
/// let metrics = LiveQueriesMetrics(live)
/// // Hummingbird: Application(router: router, services: [live, metrics])
/// // elsewhere:   await metrics.record(every: .seconds(5))   // until cancelled
/// ```
public final class LiveQueriesMetrics: Sendable {
    /// The metric names, following Prometheus' conventions: `_total` for
    /// counters, base units.
    public enum Name {
        /// Gauge: clients connected now (server-sent events and WebSockets).
        public static let clientsConnected = "dbwatch_clients_connected"
        /// Gauge: shared observations running now (one per distinct request and scope).
        public static let sharedObservations = "dbwatch_shared_observations"
        /// Counter: values written to clients, counted per client.
        public static let valuesSent = "dbwatch_values_sent_total"
        /// Counter: error events written to clients, counted per client.
        public static let errorsSent = "dbwatch_errors_sent_total"
        /// Counter: fetches of shared observations and one-shot answers.
        public static let fetches = "dbwatch_fetches_total"
        /// Counter: pending values replaced by a newer one before a slow client took them.
        public static let valuesSkipped = "dbwatch_values_skipped_total"
        /// Counter: clients disconnected because their writes made no progress in time.
        public static let clientsStalled = "dbwatch_clients_stalled_total"
        /// Counter: requests refused for starting more shared observations than allowed.
        public static let observationsRefused = "dbwatch_observations_refused_total"
        /// Timer (a histogram in Prometheus): how long the database's
        /// observations took to fetch, in seconds (every observation of
        /// the database, not only the live queries').
        public static let fetchDuration = "dbwatch_fetch_duration_seconds"
        /// Timer (a histogram in Prometheus): how long values took from
        /// their commit to a client's socket, in seconds, one per client
        /// and value news of a commit (see `LiveQueriesStatistics.commitToSocket`).
        public static let commitToSocket = "dbwatch_commit_to_socket_seconds"
        /// Every name above.
        public static let all = [
            clientsConnected, sharedObservations, valuesSent, errorsSent, fetches, valuesSkipped, clientsStalled,
            observationsRefused, fetchDuration, commitToSocket,
        ]
    }

    /// The live queries read.
    ///
    /// ```swift
    /// metrics.live.statistics.clientsConnected
    /// ```
    public let live: LiveQueries
    /// How often the adapters' service records.
    ///
    /// ```swift
    /// LiveQueriesMetrics(live, interval: .seconds(1)).interval   // 1 s
    /// ```
    public let interval: Duration

    /// The histogram bounds of ``Name/fetchDuration`` and
    /// ``Name/commitToSocket``, for a backend that
    /// takes them per label (swift-prometheus'
    /// `PrometheusMetricsFactory.durationHistogramBuckets`).
    ///
    /// ```swift
    /// var factory = PrometheusMetricsFactory(registry: registry)
    /// factory.durationHistogramBuckets = LiveQueriesMetrics.timerBuckets
    /// ```
    public static var timerBuckets: [String: [Duration]] {
        [Name.fetchDuration: DurationHistogram.upperBounds, Name.commitToSocket: DurationHistogram.upperBounds]
    }

    /// What the last ``record()`` read.
    private struct Reading {
        var statistics: LiveQueriesStatistics
        var fetchDurations: DurationHistogram
    }

    /// The counters at the last ``record()``, `nil` before the first.
    private let last = Mutex<Reading?>(nil)
    private let clientsConnected: Gauge
    private let sharedObservations: Gauge
    private let valuesSent: Counter
    private let errorsSent: Counter
    private let fetches: Counter
    private let valuesSkipped: Counter
    private let clientsStalled: Counter
    private let observationsRefused: Counter
    private let fetchDuration: Metrics.Timer
    private let commitToSocket: Metrics.Timer

    /// Reports `live` through `factory` (the bootstrapped one by default).
    ///
    /// ```swift
    /// let metrics = LiveQueriesMetrics(live, dimensions: [("node", "eu-1")])
    /// ```
    ///
    /// - Parameters:
    ///   - live: the live queries whose counters are reported.
    ///   - dimensions: labels added to every metric.
    ///   - interval: how often the adapters' service records.
    ///   - factory: the metrics backend; `MetricsSystem.factory` unless given.
    public init(
        _ live: LiveQueries, dimensions: [(String, String)] = [], interval: Duration = .seconds(5),
        factory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.live = live
        self.interval = interval
        clientsConnected = Gauge(label: Name.clientsConnected, dimensions: dimensions, factory: factory)
        sharedObservations = Gauge(label: Name.sharedObservations, dimensions: dimensions, factory: factory)
        valuesSent = Counter(label: Name.valuesSent, dimensions: dimensions, factory: factory)
        errorsSent = Counter(label: Name.errorsSent, dimensions: dimensions, factory: factory)
        fetches = Counter(label: Name.fetches, dimensions: dimensions, factory: factory)
        valuesSkipped = Counter(label: Name.valuesSkipped, dimensions: dimensions, factory: factory)
        clientsStalled = Counter(label: Name.clientsStalled, dimensions: dimensions, factory: factory)
        observationsRefused = Counter(label: Name.observationsRefused, dimensions: dimensions, factory: factory)
        fetchDuration = Metrics.Timer(label: Name.fetchDuration, dimensions: dimensions, factory: factory)
        commitToSocket = Metrics.Timer(label: Name.commitToSocket, dimensions: dimensions, factory: factory)
    }

    /// Reads the live queries' counters once and moves the metrics: gauges
    /// to the current values, counters by what was counted since the last
    /// call. Call it right before a scrape, or let
    /// ``record(every:)`` call it.
    ///
    /// ```swift
    /// metrics.record()
    /// ```
    public func record() {
        // Read and remembered under the lock, so that two concurrent calls
        // never count a difference twice; the backend is called outside it.
        let (reading, previous) = last.withLock { last in
            let now = Reading(statistics: live.statistics, fetchDurations: live.database.fetchDurations)
            defer { last = now }
            return (now, last)
        }
        Self.record(fetchDuration, from: previous?.fetchDurations ?? DurationHistogram(), to: reading.fetchDurations)
        let now = reading.statistics
        let last = previous?.statistics
        Self.record(commitToSocket, from: last?.commitToSocket ?? DurationHistogram(), to: now.commitToSocket)
        clientsConnected.record(now.clientsConnected)
        sharedObservations.record(now.observations)
        Self.increment(valuesSent, from: last?.valuesSent, to: now.valuesSent)
        Self.increment(errorsSent, from: last?.errorsSent, to: now.errorsSent)
        Self.increment(fetches, from: last?.fetches, to: now.fetches)
        Self.increment(valuesSkipped, from: last?.valuesSkipped, to: now.valuesSkipped)
        Self.increment(clientsStalled, from: last?.clientsStalled, to: now.clientsStalled)
        Self.increment(observationsRefused, from: last?.observationsRefused, to: now.observationsRefused)
    }

    /// Records every `interval` until cancelled, and once more at the end.
    ///
    /// ```swift
    /// let task = Task { await metrics.record(every: .seconds(5)) }
    /// ```
    public func record(every interval: Duration) async {
        while !Task.isCancelled {
            record()
            try? await Task.sleep(for: interval)
        }
        record()
    }

    /// Records the durations counted since `old`, each bucket's at its mean
    /// (rounded to nanoseconds). A bucket's count and total are read one
    /// after the other while durations are counted, so a total may lag
    /// its count: each value is kept within its bucket's bounds.
    private static func record(_ timer: Metrics.Timer, from old: DurationHistogram, to new: DurationHistogram) {
        forEachDuration(from: old, to: new) { timer.recordNanoseconds($0) }
    }

    /// The durations, in nanoseconds, that ``record(_:from:to:)`` records.
    static func forEachDuration(from old: DurationHistogram, to new: DurationHistogram, _ body: (Int64) -> Void) {
        var lowerBound: Int64 = 0
        for (old, new) in zip(old.buckets, new.buckets) {
            defer { lowerBound = new.upperBound.map(nanoseconds) ?? .max }
            let count = Int64(new.count - old.count)
            guard count > 0 else { continue }
            let total = max(0, nanoseconds(new.total) - nanoseconds(old.total))
            let upperBound = new.upperBound.map(nanoseconds) ?? .max
            // `remainder` durations at the mean rounded up, the others rounded down.
            let (mean, remainder) = total.quotientAndRemainder(dividingBy: count)
            for index in 0..<count {
                let value = index < remainder ? mean + 1 : mean
                body(min(max(value, lowerBound == 0 ? 0 : lowerBound + 1), upperBound))
            }
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    private static func increment(_ counter: Counter, from old: Int?, to new: Int) {
        let old = old ?? 0
        if new > old { counter.increment(by: new - old) }
    }
}
