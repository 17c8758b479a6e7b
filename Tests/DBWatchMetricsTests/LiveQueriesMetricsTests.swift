import DBWatch
import DBWatchDelivery
import DBWatchTestSupport
import Logging
import Metrics
import MetricsTestKit
import Testing

@testable import DBWatchMetrics

@Suite struct LiveQueriesMetricsTests {
    @Test func namesFollowPrometheusConventions() {
        for name in LiveQueriesMetrics.Name.all {
            #expect(name.hasPrefix("dbwatch_"))
            #expect(name.allSatisfy { $0.isLowercase || $0 == "_" })
        }
        #expect(Set(LiveQueriesMetrics.Name.all).count == LiveQueriesMetrics.Name.all.count)
    }

    @Test func recordsNothingBeforeTheFirstCountAndNeverCountsTwice() async throws {
        try await withTimeout {
            let pool = try DatabaseQueue()
            let live = LiveQueries(pool)
            let metrics = TestMetrics()
            let reporter = LiveQueriesMetrics(live, factory: metrics)
            reporter.record()
            reporter.record()
            #expect(try metrics.expectGauge(LiveQueriesMetrics.Name.clientsConnected).lastValue == 0)
            #expect(try metrics.expectCounter(LiveQueriesMetrics.Name.valuesSent).totalValue == 0)
            await live.shutDown()
        }
    }
}

/// How counts become timer values: each bucket's at its mean, within its
/// bounds even when a total lags its count (read while durations are counted).
@Suite struct HistogramRecordTests {
    @Test func aBucketsDurationsAreAtItsMeanWithinItsBounds() {
        var new = DurationHistogram()
        // 1-2 ms: 3 durations adding up to 4.5 ms.
        new.buckets[2].count = 3
        new.buckets[2].total = .microseconds(4_500)
        var values: [Int64] = []
        LiveQueriesMetrics.forEachDuration(from: DurationHistogram(), to: new) { values.append($0) }
        #expect(values == [1_500_000, 1_500_000, 1_500_000])

        // A torn read: the count moved, the total not yet (or too far).
        var torn = new
        torn.buckets[2].count = 5
        torn.buckets[12].count = 1  // 2.5-5 s, total 0
        torn.buckets[14].count = 1  // over 10 s, total 0
        values = []
        LiveQueriesMetrics.forEachDuration(from: new, to: torn) { values.append($0) }
        #expect(values == [1_000_001, 1_000_001, 2_500_000_001, 10_000_000_001])
        values = []
        var ahead = DurationHistogram()
        ahead.buckets[0].count = 1
        ahead.buckets[0].total = .seconds(1)  // 0-0.5 ms
        LiveQueriesMetrics.forEachDuration(from: DurationHistogram(), to: ahead) { values.append($0) }
        #expect(values == [500_000])
    }
}

/// `dbwatch_fetch_duration_seconds`: each record adds the fetches counted
/// since the last, each in the bucket the core counted it in, their sum
/// the real one.
@Suite struct FetchDurationMetricTests {
    @Test func eachFetchIsRecordedOnceInItsBucketWithTheRealTotal() async throws {
        try await withTimeout {
            let (queue, live, metrics, reporter) = try await Self.reporterOfTableT()
            let timer = try metrics.expectTimer(LiveQueriesMetrics.Name.fetchDuration)
            reporter.record()
            #expect(timer.values.isEmpty)

            let observing = Task { for try await _ in queue.observe(CountOfT()) {} }
            defer { observing.cancel() }
            try await waitUntil { queue.fetchDurations.count >= 1 }
            for value in 1...3 {
                try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [value]) }
                try await waitUntil { queue.fetchDurations.count >= 1 + value }
            }
            reporter.record()
            reporter.record()  // nothing new: nothing recorded twice
            let durations = queue.fetchDurations
            #expect(durations.count >= 4)
            #expect(timer.values.count == durations.count)
            #expect(Duration.nanoseconds(timer.values.reduce(0, +)) == durations.total)
            // Each value in the bucket its fetch was counted in.
            var recorded = FetchDurations()
            for value in timer.values {
                let index =
                    FetchDurations.upperBounds.firstIndex { .nanoseconds(value) <= $0 }
                    ?? FetchDurations.upperBounds.count
                recorded.buckets[index].count += 1
            }
            #expect(recorded.buckets.map(\.count) == durations.buckets.map(\.count))
            await live.shutDown()
        }
    }

    /// A database with the table `t (a)`, its live queries, and their
    /// reporter to a test backend.
    static func reporterOfTableT() async throws -> (DatabaseQueue, LiveQueries, TestMetrics, LiveQueriesMetrics) {
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a)") }
        let live = LiveQueries(queue)
        let metrics = TestMetrics()
        return (queue, live, metrics, LiveQueriesMetrics(live, factory: metrics))
    }

    /// `SELECT count(*) FROM t`.
    struct CountOfT: Queryable {
        static var defaultValue: Int { 0 }
        func fetch(_ db: Database) throws -> Int { try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? 0 }
    }
}

/// `dbwatch_commit_to_socket_seconds`: each value written to a client
/// after a commit is one timer value, the sum the delivery engine's.
@Suite struct CommitToSocketMetricTests {
    @Test func eachValueWrittenAfterACommitIsRecordedOnce() async throws {
        try await withTimeout {
            let (queue, live, metrics, reporter) = try await FetchDurationMetricTests.reporterOfTableT()
            let timer = try metrics.expectTimer(LiveQueriesMetrics.Name.commitToSocket)

            let admission = live.eventStream(
                FetchDurationMetricTests.CountOfT(), scope: nil, lastEventID: nil,
                logger: Logger(label: "CommitToSocketMetricTests"),
                encode: LiveQueries.encodeJSON)
            guard case .accepted(let stream) = admission else { throw LiveQueriesError.shuttingDown }
            let (written, sink) = AsyncStream.makeStream(of: Void.self)
            let running = Task { try await stream.run { _ in sink.yield() } }
            defer { running.cancel() }
            var writes = written.makeAsyncIterator()
            await writes.next()  // the first value: no commit's news
            try await waitUntil { live.statistics.valuesSent == 1 }  // counted after the write returned
            reporter.record()
            #expect(timer.values.isEmpty)

            for value in 1...3 {
                try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [value]) }
                await writes.next()
                try await waitUntil { live.statistics.commitToSocket.count == value }
            }
            reporter.record()
            reporter.record()  // nothing new: nothing recorded twice
            let latency = live.statistics.commitToSocket
            #expect(timer.values.count == 3)
            #expect(Duration.nanoseconds(timer.values.reduce(0, +)) == latency.total)
            await live.shutDown()
        }
    }
}
