import DBWatch
import DBWatchDelivery
import DBWatchServerTestSupport
import DBWatchTestSupport
import Logging
import Testing

@testable import dbwatch

/// `serve`'s own refusals (a missing or bad token, a foreign `Host`, an
/// unknown query, a method it does not serve), each one debug line with
/// the stable `dbwatch.*` keys, captured in-process from a real server.
@Suite("serve: one structured log line per refused request")
struct ServeRefusalLogTests {
    @Test func eachRefusalIsOneDebugLineWithTheStableKeysAndNoToken() async throws {
        try await withTimeout {
            try await withTemporaryDirectory { directory in
                let path = directory.file("app.sqlite")
                let pool = try DatabasePool(path: path)
                try await pool.write { db in try db.execute(sql: "CREATE TABLE player (name TEXT)") }
                let tokens = directory.file("tokens.txt")
                try "s3cret\n".write(toFile: tokens, atomically: true, encoding: .utf8)
                let server = QueryServer(
                    live: LiveQueries(pool), queries: [try ServedQuery.parse("top=SELECT name FROM player")],
                    limits: QueryLimits(), maxClients: 10, logsClients: false, title: "app.sqlite",
                    access: try await ServeAccess.load(tokenFile: tokens, jwtKeyFile: nil))
                let logs = LogRecorder()
                let running = try await ServerRun.start(
                    server, host: "127.0.0.1", port: 0, logger: logs.logger(label: "dbwatch", level: .debug))
                let port = Int(running.url.split(separator: ":").last!.dropLast())!
                let refusals = { logs.all.filter { $0.metadata[LogKey.status] != nil } }
                let good = [("Authorization", "Bearer s3cret")]

                func expectOneMoreRefusal(
                    status: Int, path: String, reason: String, _ request: () async throws -> Int
                ) async throws {
                    let before = refusals().count
                    #expect(try await request() == status)
                    let new = refusals().dropFirst(before)
                    #expect(new.count == 1, "\(new.map(\.metadata))")
                    guard let line = new.first else { return }
                    #expect(line.level == .debug)
                    #expect(line.message == "Request refused")
                    #expect(line.metadata[LogKey.status] == "\(status)")
                    #expect(line.metadata[LogKey.path] == path)
                    #expect(line.metadata[LogKey.reason]?.contains(reason) == true, "\(line.metadata)")
                    #expect(!line.metadata.values.contains { $0.contains("s3cret") }, "\(line.metadata)")
                    // The client's address is known to `serve`.
                    #expect(line.metadata[LogKey.client]?.hasPrefix("127.0.0.1:") == true, "\(line.metadata)")
                }

                let base = "http://127.0.0.1:\(port)"
                try await expectOneMoreRefusal(status: 401, path: "/queries/top", reason: "needs a token") {
                    try await fetch("\(base)/queries/top", headers: []).status
                }
                try await expectOneMoreRefusal(status: 401, path: "/queries", reason: "the token is not valid") {
                    try await fetch("\(base)/queries", headers: [("Authorization", "Bearer wrong")]).status
                }
                try await expectOneMoreRefusal(status: 403, path: "/queries/top", reason: "does not answer to the host")
                {
                    let head =
                        "GET /queries/top?token=s3cret HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n"
                    return try await rawHTTPExchange(port: port, head).status
                }
                try await expectOneMoreRefusal(status: 404, path: "/queries/nothing", reason: "no query named") {
                    try await fetch("\(base)/queries/nothing", headers: good).status
                }
                try await expectOneMoreRefusal(status: 405, path: "/queries/top", reason: "only GET is served") {
                    try await fetch("\(base)/queries/top", method: .DELETE, headers: good).status
                }
                // Answers are no refusals.
                let before = refusals().count
                #expect(try await fetch("\(base)/healthz", headers: []).status == 200)
                #expect(try await fetch("\(base)/queries", headers: good).status == 200)
                #expect(refusals().count == before)
                // Nothing of it above debug.
                #expect(logs.all.filter { $0.level > .debug && $0.metadata[LogKey.status] != nil }.isEmpty)
                try await running.stop()
            }
        }
    }
}
