import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Metrics
import MetricsTestKit
import Testing

/// The Hummingbird adapter's `/healthz` and `/readyz` (one line,
/// `live.addHealthRoutes(to: router)`, in the test server) and
/// `LiveQueriesMetrics` while clients stream, over real sockets.
@Suite("Hummingbird: health, readiness and metrics")
struct HealthRoutesTests {
    @Test func readyWhileTheDatabaseAnswersUnreadyOnceItIsClosedAliveThroughout() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let base = "http://127.0.0.1:\(server.port)/"
                let health = try await fetch(base + "healthz")
                #expect(health.status == 200)
                #expect(health.body == #"{"status":"ok"}"#)
                let ready = try await fetch(base + "readyz")
                #expect(ready.status == 200)
                #expect(ready.body == #"{"status":"ready"}"#)

                await server.database.close()
                let closed = try await fetch(base + "readyz")
                #expect(closed.status == 503)
                #expect(closed.body.contains("not ready"), "\(closed.body)")
                #expect(try await fetch(base + "healthz").status == 200)
            }
        }
    }

    @Test func clientsConnectedIsTheClientsHeldAndValuesSentCountEachClient() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let metrics = TestMetrics()
                let reporter = LiveQueriesMetrics(server.live, dimensions: [("node", "test")], factory: metrics)
                let url = "http://127.0.0.1:\(server.port)/top/events"
                var streams: [EventStream] = []
                for _ in 0..<3 {
                    let stream = try await EventStream.open(url)
                    _ = try await stream.nextEvent()
                    streams.append(stream)
                }
                try await waitUntil { server.live.statistics.clientsConnected == 3 }
                reporter.record()
                let dimensions = [("node", "test")]
                let connected = try metrics.expectGauge(LiveQueriesMetrics.Name.clientsConnected, dimensions)
                #expect(connected.lastValue == 3)
                #expect(try metrics.expectGauge(LiveQueriesMetrics.Name.sharedObservations, dimensions).lastValue == 1)
                let sent = try metrics.expectCounter(LiveQueriesMetrics.Name.valuesSent, dimensions)
                #expect(sent.totalValue == 3)

                try await server.database.write { db in
                    try db.execute(sql: "INSERT INTO player (name, score) VALUES ('zoe', 1000)")
                }
                for stream in streams { _ = try await stream.nextEvent() }
                try await waitUntil { server.live.statistics.valuesSent == 6 }
                reporter.record()
                #expect(sent.totalValue == 6)
                streams.removeAll()
                try await waitUntil { server.live.statistics.clientsConnected == 0 }
                reporter.record()
                #expect(connected.lastValue == 0)
            }
        }
    }
}
