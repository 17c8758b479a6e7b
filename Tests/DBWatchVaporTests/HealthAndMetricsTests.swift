#if Vapor
    import DBWatch
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    import DBWatchVapor
    import MetricsTestKit
    import Testing
    import Vapor

    /// The Vapor adapter's `/healthz` and `/readyz` (one line,
    /// `live.addHealthRoutes(to: app)`, in the test server) and
    /// `LiveQueriesMetrics` as a lifecycle handler while clients stream,
    /// over real sockets.
    @Suite("Vapor: health, readiness and metrics")
    struct HealthAndMetricsTests {
        @Test func readyWhileTheDatabaseAnswersUnreadyOnceItIsClosedAliveThroughout() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
                    let health = try await fetch("\(server.baseURL)/healthz")
                    #expect(health.status == 200)
                    #expect(health.body == #"{"status":"ok"}"#)
                    let ready = try await fetch("\(server.baseURL)/readyz")
                    #expect(ready.status == 200)
                    #expect(ready.body == #"{"status":"ready"}"#)

                    await server.database.close()
                    let closed = try await fetch("\(server.baseURL)/readyz")
                    #expect(closed.status == 503)
                    #expect(closed.body.contains("not ready"), "\(closed.body)")
                    #expect(try await fetch("\(server.baseURL)/healthz").status == 200)
                }
            }
        }

        /// The lifecycle handler records from boot on, on its own: the
        /// gauges follow the clients the test holds, values sent count each
        /// client, and every fetch of the shared observation is in the
        /// fetch-duration timer.
        @Test func theLifecycleHandlerRecordsWhileClientsStream() async throws {
            let metrics = TestMetrics()
            let dimensions = [("node", "test")]
            try await withTimeout {
                try await VaporServer.with(handlers: { live in
                    [LiveQueriesMetrics(live, dimensions: dimensions, interval: .milliseconds(10), factory: metrics)]
                }) { server in
                    let connected = try metrics.expectGauge(LiveQueriesMetrics.Name.clientsConnected, dimensions)
                    let sent = try metrics.expectCounter(LiveQueriesMetrics.Name.valuesSent, dimensions)
                    let fetchDuration = try metrics.expectTimer(LiveQueriesMetrics.Name.fetchDuration, dimensions)
                    // Booted: the handler's first record runs at once.
                    try await waitUntil { connected.lastValue == 0 }

                    var streams: [EventStream] = []
                    for _ in 0..<3 {
                        let stream = try await EventStream.open("\(server.baseURL)/top/events")
                        _ = try await stream.nextEvent()
                        streams.append(stream)
                    }
                    try await waitUntil { connected.lastValue == 3 && sent.totalValue == 3 }
                    try await server.database.write { db in
                        try db.execute(sql: "INSERT INTO player (name, score) VALUES ('zoe', 1000)")
                    }
                    for stream in streams { _ = try await stream.nextEvent() }
                    try await waitUntil { sent.totalValue == 6 }
                    // The shared observation's two fetches (the first value
                    // and the refetch), each within the core's buckets.
                    let fetches = server.database.fetchDurations.count
                    #expect(fetches >= 2)
                    try await waitUntil { fetchDuration.values.count == fetches }
                    #expect(fetchDuration.values.allSatisfy { $0 >= 0 && $0 <= 10_000_000_000 })

                    streams.removeAll()
                    try await waitUntil { connected.lastValue == 0 }
                }
            }
        }
    }
#endif
