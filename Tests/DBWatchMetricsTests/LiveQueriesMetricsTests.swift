import DBWatch
import DBWatchDelivery
import DBWatchMetrics
import DBWatchTestSupport
import Metrics
import MetricsTestKit
import Testing

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
