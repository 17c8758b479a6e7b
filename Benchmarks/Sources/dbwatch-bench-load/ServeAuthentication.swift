import BenchProcess
import Foundation

/// `dbwatch serve`'s fan-out without authentication, with a bearer token
/// and with a JWT (issue 24), in one run: `clients` clients of one query,
/// the board written by this process. The access is checked once per
/// request; the fan-out itself should cost the same in the three modes.
extension ScenarioRun {
    /// One way of serving: its options, the clients' path and headers.
    struct AccessMode {
        let name: String
        let arguments: [String]
        let path: String
        let headers: [(String, String)]
    }

    /// The HS256 secret of ``benchmarkJWT``.
    static let jwtSecret = "dbwatch-bench-load: the HS256 secret of the benchmark's JWT"
    /// `{"sub":"bench","team":"red","exp":4102444800}` (2100-01-01) signed
    /// with ``jwtSecret``, made once with Python's `hmac`, so that the load
    /// client needs no JWT library.
    static let benchmarkJWT =
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJiZW5jaCIsInRlYW0iOiJyZWQiLCJleHAiOjQxMDI0NDQ4MDB9."
        + "5qEcmIQ8FhwylozvNqlJTEfITq0B3KPN-T7S4NR-JOo"

    /// The board of ``serveQuery`` with one parameter more, which does not
    /// change its rows: `:team` from the query string, or `:auth_team` from
    /// the JWT's claim `team`.
    static func boardQuery(parameter: String) -> String {
        "board=SELECT 'round:' || (SELECT round FROM meta WHERE id = 1) AS round, id, name, score "
            + "FROM player WHERE \(parameter) IS NOT NULL ORDER BY score DESC, id LIMIT 10"
    }

    /// The three modes, in an order that turns with `run`, so that none is
    /// always first or last.
    func accessModes(directory: String, run: Int) throws -> [AccessMode] {
        let tokens = directory + "/tokens.txt"
        try "# the benchmark's token\nbench-token-0123456789abcdef\n".write(
            toFile: tokens, atomically: true, encoding: .utf8)
        let secret = directory + "/jwt.secret"
        try Self.jwtSecret.write(toFile: secret, atomically: true, encoding: .utf8)
        let modes = [
            AccessMode(
                name: "no auth", arguments: ["--query", Self.boardQuery(parameter: ":team")],
                path: "/queries/board/events?team=red", headers: []),
            AccessMode(
                name: "token",
                arguments: ["--query", Self.boardQuery(parameter: ":team"), "--auth-token-file", tokens],
                path: "/queries/board/events?team=red",
                headers: [("Authorization", "Bearer bench-token-0123456789abcdef")]),
            AccessMode(
                name: "JWT",
                arguments: ["--query", Self.boardQuery(parameter: ":auth_team"), "--auth-jwt-secret-file", secret],
                path: "/queries/board/events", headers: [("Authorization", "Bearer " + Self.benchmarkJWT)]),
        ]
        let shift = (run - 1) % modes.count
        return Array(modes[shift...] + modes[..<shift])
    }

    /// The three modes one after the other, each on a fresh board.
    func serveAuthentication(run: Int) async throws {
        guard FileManager.default.isExecutableFile(atPath: options.dbwatch) else {
            throw LoadError(description: "no dbwatch executable at \(options.dbwatch): build it or pass --dbwatch PATH")
        }
        let modesDirectory = try ServerProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: modesDirectory) }
        for mode in try accessModes(directory: modesDirectory, run: run) {
            progress("  \(mode.name)")
            let (writer, server) = try serveBoard(mode.arguments, name: "dbwatch serve (\(mode.name))")
            defer {
                server.stop()
                writer.close()
            }
            let label = "auth \(clients) \(mode.name)"
            let recorder = Recorder(clients: clients)
            let start = nowNanoseconds()
            let cpuBeforeConnecting = server.cpuNanoseconds
            let channels = try await connectClients(
                count: clients, path: { _ in mode.path }, port: server.port, group: group, recorder: recorder,
                marker: Array(#""round:"#.utf8), headers: mode.headers)
            results.add("\(label): connect+first value, s", Double(nowNanoseconds() - start) / 1e9)
            results.add(
                "\(label): server CPU per connection, µs",
                Double(server.cpuNanoseconds - cpuBeforeConnecting) / 1e3 / Double(clients))
            try await Task.sleep(for: .milliseconds(500))
            try await measureServeFanOut(label: label, recorder: recorder, server: server, writer: writer)
            await closeClients(channels)
        }
    }
}

extension Results {
    /// Each mode against no authentication, in the same run: latency and
    /// CPU per write, as percentages.
    func deriveAuthentication(clients: [Int]) {
        for count in clients {
            for mode in ["token", "JWT"] {
                for measure in [
                    "commit to last client p50, ms", "commit to each client p50, ms", "server CPU per write, ms",
                    "server CPU per connection, µs",
                ] {
                    if let value = last("auth \(count) \(mode): \(measure)"),
                        let none = last("auth \(count) no auth: \(measure)"), none > 0
                    {
                        add("auth \(count): \(mode) / no auth, \(measure.prefix { $0 != "," }), %", 100 * value / none)
                    }
                }
            }
        }
    }
}
