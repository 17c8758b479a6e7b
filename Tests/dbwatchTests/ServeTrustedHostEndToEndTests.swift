import DBWatchTestSupport
import Foundation
import Testing

/// `dbwatch serve` against DNS rebinding: a request that names another host
/// (a page whose name an attacker rebound to 127.0.0.1) reads nothing and
/// runs no query; the names the server is reached by work.
@Suite("dbwatch serve answers only its own names", RequiredProgram.sqlite3.trait)
struct ServeTrustedHostEndToEndTests {
    private let served = ServeEndToEndTests()

    private func port(of url: String) throws -> Int {
        try #require(url.firstMatch(of: /:(\d+)\//).flatMap { Int($0.output.1) })
    }

    private func get(_ path: String, host: String?) -> String {
        "GET \(path) HTTP/1.1\r\n\(host.map { "Host: \($0)\r\n" } ?? "")Connection: close\r\n\r\n"
    }

    @Test(.hangLimit(minutes: 1))
    func aForeignHostIsRefusedWithJSONBeforeAnyQueryRuns() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try served.makePlayers(in: scratch)
            let server = try await served.serve(path, ["--query", ServeEndToEndTests.top])
            defer { server.run.kill() }
            let port = try port(of: server.url)
            for target in ["/", "/queries", "/queries/top?n=10", "/queries/top/events?n=10", "/nowhere"] {
                let answer = try await rawHTTPExchange(port: port, get(target, host: "evil.example:\(port)"))
                #expect(answer.status == 403, "\(target)")
                #expect(answer.header("content-type") == "application/json; charset=utf-8", "\(target)")
                #expect(try jsonObject(answer.body)["message"] as? String != nil, "\(target)")
                #expect(!answer.body.contains("Arthur"), "\(target)")
            }
            let none = try await rawHTTPExchange(port: port, get("/queries/top?n=1", host: nil))
            #expect(none.status == 400)
            // The same requests with this machine's names are served.
            for host in ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"] {
                let answer = try await rawHTTPExchange(port: port, get("/queries/top?n=1", host: host))
                #expect(answer.status == 200, "\(host)")
                #expect(answer.body.contains("Arthur"), "\(host)")
            }
            // No stream was opened by a refused request.
            server.run.interrupt()
            let snapshot = try await server.run.waitForExit(timeout: 10)
            #expect(!snapshot.stderr.contains(" connected from "), "\(snapshot)")
        }
    }

    @Test(.hangLimit(minutes: 1))
    func allowedNamesAreServed() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try served.makePlayers(in: scratch)
            let server = try await served.serve(
                path,
                ["--query", ServeEndToEndTests.top, "--allow-host", "dashboard.test", "--allow-host", ".corp.test"])
            defer { server.run.kill() }
            let port = try port(of: server.url)
            for host in ["dashboard.test:\(port)", "corp.test", "db.corp.test:\(port)"] {
                let answer = try await rawHTTPExchange(port: port, get("/queries/top?n=1", host: host))
                #expect(answer.status == 200, "\(host)")
            }
            let other = try await rawHTTPExchange(
                port: port, get("/queries/top?n=1", host: "dashboard.test.evil.example"))
            #expect(other.status == 403)
        }
    }

    @Test(.hangLimit(minutes: 1))
    func anAllowedHostThatIsNotANameIsAUsageError() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try served.makePlayers(in: scratch)
            for value in ["http://app.example", "app.example:8080", "", "app/x"] {
                let snapshot = try await DBWatchRun.run([
                    "serve", path, "--port", "0", "--query", ServeEndToEndTests.top, "--allow-host", value,
                ])
                #expect(snapshot.exitStatus == 64, "\(value): \(snapshot)")
                #expect(snapshot.stderr.contains("--allow-host"), "\(value): \(snapshot)")
            }
        }
    }
}
