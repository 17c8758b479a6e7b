import DBWatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `dbwatch replicate --metrics`: its `/metrics`, `/healthz` and `/readyz`
/// scraped over a real socket while the replica follows PostgreSQL, loses
/// it and catches up again.
@Suite("dbwatch replicate: metrics, health and readiness", RequiredProgram.postgresql.trait)
struct ReplicateMetricsEndToEndTests {
    /// The operations server's address, once `replicate` printed it.
    func operationsURL(of run: ChildProcess) async throws -> String {
        let snapshot = try await run.wait(for: "the metrics address") {
            $0.stdout.contains("/readyz at http://") || $0.isFinished
        }
        guard let match = snapshot.stdout.firstMatch(of: /http:\/\/127\.0\.0\.1:\d+\//) else {
            throw HTTPTestError("no address printed\n\(snapshot)")
        }
        return String(match.output)
    }

    /// Asks `url` until `condition` holds on the status and body; returns the last answer.
    @discardableResult
    func poll(_ url: String, until condition: (Int, String) -> Bool) async throws -> (status: Int, body: String) {
        while true {
            let answer = try await fetch(url)
            if condition(answer.status, answer.body) { return (answer.status, answer.body) }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The value of `name` in a scrape of `url`'s `/metrics`.
    func metric(_ name: String, at url: String) async throws -> Double {
        let body = try await fetch(url + "metrics").body
        return try #require(PrometheusText.value(of: name, in: body), "\(name) missing:\n\(body)")
    }

    @Test func lagRisesWhilePostgresIsStoppedAndReadinessFollowsIt() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                try await server.psql("CREATE TABLE player (id int PRIMARY KEY, name text NOT NULL)")
                try await withTemporaryDirectory { directory in
                    let run = try DBWatchRun.start([
                        "replicate", server.connectionURL + "?sslmode=disable", directory.file("replica.sqlite"),
                        "--table", "player", "--metrics", "127.0.0.1:0", "--ready-max-lag", "1",
                    ])
                    defer { run.kill() }
                    let url = try await operationsURL(of: run)
                    #expect(try await fetch(url + "healthz").status == 200)
                    // Ready once streaming and caught up.
                    try await poll(url + "readyz") { status, _ in status == 200 }
                    #expect(try await metric("dbwatch_replica_streaming", at: url) == 1)
                    #expect(try await metric("dbwatch_replica_lag_seconds", at: url) <= 1)

                    try await server.psql("INSERT INTO player VALUES (1, 'Arthur'), (2, 'Barbara')")
                    try await poll(url + "metrics") { _, body in
                        PrometheusText.value(of: "dbwatch_replica_rows_applied_total", in: body) == 2
                    }
                    #expect(try await metric("dbwatch_replica_transactions_applied_total", at: url) == 1)
                    #expect(try await metric("dbwatch_replica_applied_position_bytes", at: url) > 0)

                    // PostgreSQL stops: unready, and the lag grows.
                    try await server.stop()
                    let unready = try await poll(url + "readyz") { status, _ in status == 503 }
                    #expect(unready.body.contains("not ready"), "\(unready.body)")
                    #expect(try await fetch(url + "healthz").status == 200)
                    try await poll(url + "metrics") { _, body in
                        (PrometheusText.value(of: "dbwatch_replica_lag_seconds", in: body) ?? 0) > 1
                    }
                    let first = try await metric("dbwatch_replica_lag_seconds", at: url)
                    try await poll(url + "metrics") { _, body in
                        (PrometheusText.value(of: "dbwatch_replica_lag_seconds", in: body) ?? 0) > first + 0.5
                    }
                    #expect(try await metric("dbwatch_replica_streaming", at: url) == 0)
                    #expect(try await fetch(url + "readyz").status == 503)

                    // PostgreSQL is back: the replica catches up, ready again, the lag falls back.
                    try await server.start()
                    try await server.psql("INSERT INTO player VALUES (3, 'Craig')")
                    try await poll(url + "readyz") { status, _ in status == 200 }
                    #expect(try await metric("dbwatch_replica_lag_seconds", at: url) <= 1)
                    #expect(try await metric("dbwatch_replica_reconnects_total", at: url) >= 1)
                    try await poll(url + "metrics") { _, body in
                        PrometheusText.value(of: "dbwatch_replica_rows_applied_total", in: body) == 3
                    }
                    run.send(SIGTERM)
                    #expect(try await run.waitForExit().exitStatus == 0)
                }
            }
        }
    }
}
