import Foundation
import Metrics
import Synchronization

/// A ``PostgresReplica``'s status reported through swift-metrics, under
/// Prometheus-style names (see ``PostgresReplicaMetrics/Name``).
///
/// Reads ``PostgresReplica/status`` on each ``record(at:)`` (a lock and a
/// copy) and moves the metrics: nothing runs on the replication path.
/// Without a bootstrapped metrics backend swift-metrics' default factory
/// drops every value.
///
/// ```swift
/// let metrics = PostgresReplicaMetrics(replica)
/// let task = Task { await metrics.record(every: .seconds(5)) }
/// ```
public final class PostgresReplicaMetrics: Sendable {
    /// The metric names, following Prometheus' conventions: `_total` for
    /// counters, base units.
    public enum Name {
        /// Gauge: the position up to which every transaction is applied (a byte offset in PostgreSQL's log).
        public static let appliedPosition = "dbwatch_replica_applied_position_bytes"
        /// Gauge: bytes of PostgreSQL's log still to apply.
        public static let lagBytes = "dbwatch_replica_lag_bytes"
        /// Gauge: seconds behind PostgreSQL (``PostgresReplica/Status/lag(at:)``).
        public static let lagSeconds = "dbwatch_replica_lag_seconds"
        /// Gauge: 1 while streaming from a connected PostgreSQL, else 0.
        public static let streaming = "dbwatch_replica_streaming"
        /// Counter: transactions applied.
        public static let transactionsApplied = "dbwatch_replica_transactions_applied_total"
        /// Counter: row changes applied (inserted, updated or deleted rows, truncated tables).
        public static let rowsApplied = "dbwatch_replica_rows_applied_total"
        /// Counter: connections to PostgreSQL lost and retried.
        public static let reconnects = "dbwatch_replica_reconnects_total"
        /// Every name above.
        public static let all = [
            appliedPosition, lagBytes, lagSeconds, streaming, transactionsApplied, rowsApplied, reconnects,
        ]
    }

    /// The replica read.
    ///
    /// ```swift
    /// metrics.replica.status.lag()
    /// ```
    public let replica: PostgresReplica

    /// The counters at the last ``record(at:)``.
    private let last = Mutex<(transactions: Int, rows: Int, reconnects: Int)>((0, 0, 0))
    private let appliedPosition: Gauge
    private let lagBytes: Gauge
    private let lagSeconds: Gauge
    private let streaming: Gauge
    private let transactionsApplied: Counter
    private let rowsApplied: Counter
    private let reconnects: Counter

    /// Reports `replica` through `factory` (the bootstrapped one by default).
    ///
    /// ```swift
    /// let metrics = PostgresReplicaMetrics(replica, dimensions: [("node", "eu-1")])
    /// ```
    ///
    /// - Parameters:
    ///   - replica: the replica whose status is reported.
    ///   - dimensions: labels added to every metric.
    ///   - factory: the metrics backend; `MetricsSystem.factory` unless given.
    public init(
        _ replica: PostgresReplica, dimensions: [(String, String)] = [],
        factory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.replica = replica
        appliedPosition = Gauge(label: Name.appliedPosition, dimensions: dimensions, factory: factory)
        lagBytes = Gauge(label: Name.lagBytes, dimensions: dimensions, factory: factory)
        lagSeconds = Gauge(label: Name.lagSeconds, dimensions: dimensions, factory: factory)
        streaming = Gauge(label: Name.streaming, dimensions: dimensions, factory: factory)
        transactionsApplied = Counter(label: Name.transactionsApplied, dimensions: dimensions, factory: factory)
        rowsApplied = Counter(label: Name.rowsApplied, dimensions: dimensions, factory: factory)
        reconnects = Counter(label: Name.reconnects, dimensions: dimensions, factory: factory)
    }

    /// Reads the replica's status once and moves the metrics: gauges to
    /// the current values, counters by what was counted since the last call.
    ///
    /// ```swift
    /// metrics.record()   // right before a scrape
    /// ```
    public func record(at now: Date = Date()) {
        // Read and remembered under the lock, so that two concurrent calls
        // never count a difference twice; the backend is called outside it.
        let (status, last) = last.withLock { last in
            let status = replica.status
            defer { last = (status.appliedTransactions, status.appliedChanges, status.reconnects) }
            return (status, last)
        }
        if let position = status.appliedPosition { appliedPosition.record(Double(position.rawValue)) }
        lagBytes.record(Double(status.lagBytes))
        lagSeconds.record(status.lag(at: now))
        streaming.record(status.phase == .streaming && status.isConnected ? 1 : 0)
        if status.appliedTransactions > last.transactions {
            transactionsApplied.increment(by: status.appliedTransactions - last.transactions)
        }
        if status.appliedChanges > last.rows { rowsApplied.increment(by: status.appliedChanges - last.rows) }
        if status.reconnects > last.reconnects { reconnects.increment(by: status.reconnects - last.reconnects) }
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
}
