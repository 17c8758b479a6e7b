import DBWatchTestSupport
import Foundation
import Testing

/// `dbwatch serve --metrics`: `/metrics` scraped over a real socket while
/// clients stream, and the load balancer's `/healthz` and `/readyz`.
@Suite("dbwatch serve: metrics, health and readiness", RequiredProgram.sqlite3.trait)
struct ServeMetricsEndToEndTests {
    let serving = ServeEndToEndTests()

    /// Scrapes `/metrics` until `condition` holds on its body; returns it.
    func scrape(
        _ served: ServeEndToEndTests.Served, headers: [(String, String)] = [], until condition: (String) -> Bool
    )
        async throws -> String
    {
        while true {
            let answer = try await get(served.url + "metrics", headers: headers)
            #expect(answer.status == 200, "\(answer.body)")
            if condition(answer.body) { return answer.body }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Fetches `url` with `headers`: the status and the body.
    func get(_ url: String, headers: [(String, String)] = []) async throws -> (status: Int, body: String) {
        let answer = try await fetch(url, headers: headers)
        return (answer.status, answer.body)
    }

    @Test func clientsConnectedIsTheClientsHeldAndValuesSentMoveAfterACommit() async throws {
        // Also: the fetch durations and the commit-to-socket latency as histograms.
        try await withTimeout {
            try await withTemporaryDirectory { scratch in
                let path = try serving.makePlayers(in: scratch)
                let served = try await serving.serve(path, ["--query", ServeEndToEndTests.top, "--metrics"])
                defer { served.run.kill() }
                let before = try await scrape(served) { _ in true }
                #expect(PrometheusText.declares("dbwatch_clients_connected", as: "gauge", in: before), "\(before)")
                #expect(PrometheusText.declares("dbwatch_values_sent_total", as: "counter", in: before), "\(before)")
                #expect(PrometheusText.value(of: "dbwatch_clients_connected", in: before) == 0)

                // Three clients of one query: one shared observation.
                var streams: [EventStream] = []
                for _ in 0..<3 {
                    let stream = try await EventStream.open(served.url + "queries/top/events?n=2")
                    _ = try await stream.nextEvent()
                    streams.append(stream)
                }
                let holding = try await scrape(served) {
                    PrometheusText.value(of: "dbwatch_clients_connected", in: $0) == 3
                }
                #expect(PrometheusText.value(of: "dbwatch_shared_observations", in: holding) == 1)
                let sent = try #require(PrometheusText.value(of: "dbwatch_values_sent_total", in: holding))
                #expect(sent >= 3)

                try serving.write("UPDATE player SET score = 200 WHERE name = 'Craig'", on: path)
                for stream in streams { _ = try await stream.nextEvent() }
                let after = try await scrape(served) {
                    (PrometheusText.value(of: "dbwatch_values_sent_total", in: $0) ?? 0) >= sent + 3
                }
                #expect(PrometheusText.value(of: "dbwatch_clients_connected", in: after) == 3)
                #expect((PrometheusText.value(of: "dbwatch_fetches_total", in: after) ?? 0) >= 2)
                // The shared observation's fetches, in the core's buckets.
                let histogram = "dbwatch_fetch_duration_seconds"
                #expect(PrometheusText.declares(histogram, as: "histogram", in: after), "\(after)")
                let fetches = try #require(PrometheusText.value(of: histogram + "_count", in: after))
                #expect(fetches >= 2)
                #expect(PrometheusText.value(of: histogram + #"_bucket{le="+Inf"}"#, in: after) == fetches)
                #expect(PrometheusText.value(of: histogram + #"_bucket{le="0.002"}"#, in: after) != nil, "\(after)")
                #expect((PrometheusText.value(of: histogram + "_sum", in: after) ?? 0) > 0)
                // The commit's value, once per client (their first values are no commit's news).
                let latency = "dbwatch_commit_to_socket_seconds"
                #expect(PrometheusText.declares(latency, as: "histogram", in: after), "\(after)")
                #expect(PrometheusText.value(of: latency + "_count", in: after) == 3, "\(after)")
                #expect(PrometheusText.value(of: latency + #"_bucket{le="+Inf"}"#, in: after) == 3)
                #expect(PrometheusText.value(of: latency + #"_bucket{le="0.0005"}"#, in: after) != nil, "\(after)")
                #expect((PrometheusText.value(of: latency + "_sum", in: after) ?? 0) > 0)

                // One client leaves: the gauge follows.
                streams.removeLast()
                _ = try await scrape(served) { PrometheusText.value(of: "dbwatch_clients_connected", in: $0) == 2 }
            }
        }
    }

    @Test func healthAndReadinessAnswerWithoutATokenWhileMetricsNeedsOne() async throws {
        try await withTimeout {
            try await withTemporaryDirectory { scratch in
                let path = try serving.makePlayers(in: scratch)
                let tokens = scratch.file("tokens.txt")
                try "a-token\n".write(toFile: tokens, atomically: true, encoding: .utf8)
                let served = try await serving.serve(
                    path, ["--query", ServeEndToEndTests.top, "--metrics", "--auth-token-file", tokens])
                defer { served.run.kill() }
                let health = try await get(served.url + "healthz")
                #expect(health.status == 200)
                #expect(health.body == #"{"status":"ok"}"#)
                let ready = try await get(served.url + "readyz")
                #expect(ready.status == 200)
                #expect(ready.body == #"{"status":"ready"}"#)
                #expect(try await get(served.url + "metrics").status == 401)
                let metrics = try await get(served.url + "metrics", headers: [("Authorization", "Bearer a-token")])
                #expect(metrics.status == 200)
                #expect(PrometheusText.value(of: "dbwatch_clients_connected", in: metrics.body) == 0)
                // The Host check still applies.
                let port = try #require(served.url.firstMatch(of: /:(\d+)\//).flatMap { Int($0.output.1) })
                let foreign = try await rawHTTPExchange(
                    port: port, "GET /healthz HTTP/1.1\r\nHost: evil.example:\(port)\r\nConnection: close\r\n\r\n")
                #expect(foreign.status == 403)
            }
        }
    }

    @Test func withoutTheFlagThereIsNoMetricsRoute() async throws {
        try await withTimeout {
            try await withTemporaryDirectory { scratch in
                let path = try serving.makePlayers(in: scratch)
                let served = try await serving.serve(path, ["--query", ServeEndToEndTests.top])
                defer { served.run.kill() }
                #expect(try await get(served.url + "metrics").status == 404)
                #expect(try await get(served.url + "readyz").status == 200)
            }
        }
    }
}
