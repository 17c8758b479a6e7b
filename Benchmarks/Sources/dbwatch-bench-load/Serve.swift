import BenchProcess
import CSQLiteRaw
import Foundation

/// `dbwatch serve` under workload 1 (issue 17), with the writes made by
/// another process: this one.
extension ScenarioRun {
    /// The served query: the ten best players, each row led by the round of
    /// the last write as the text `round:N`, which the clients find in each
    /// event (`"round:` in the JSON rows).
    static let serveQuery =
        "SELECT 'round:' || (SELECT round FROM meta WHERE id = 1) AS round, id, name, score "
        + "FROM player ORDER BY score DESC, id LIMIT 10"

    /// `clients` clients of `dbwatch serve`'s `/queries/board/events`, the
    /// board written through SQLite by this process (commit time taken when
    /// `COMMIT` returns); then the same fan-out on the in-process DBWatch
    /// server of `dbwatch-bench-server`, written by `POST` (commit time
    /// taken in the transaction), for what detecting another process's
    /// commit costs.
    func serve() async throws {
        guard FileManager.default.isExecutableFile(atPath: options.dbwatch) else {
            throw LoadError(
                description: """
                    no dbwatch executable at \(options.dbwatch): build it (swift build -c release --product dbwatch \
                    at the repository root, then run from there) or pass --dbwatch PATH
                    """)
        }
        do {
            let (writer, server) = try serveBoard(Self.boardQueryArguments, name: "dbwatch serve")
            defer {
                server.stop()
                writer.close()
            }
            let label = "serve \(clients) dbwatch serve, external writes"
            let recorder = Recorder(clients: clients)
            let start = nowNanoseconds()
            let channels = try await connectClients(
                count: clients, path: { _ in "/queries/board/events" }, port: server.port, group: group,
                recorder: recorder, marker: Array(#""round:"#.utf8))
            results.add("\(label): connect+first value, s", Double(nowNanoseconds() - start) / 1e9)
            try await Task.sleep(for: .milliseconds(500))
            try await measureServeFanOut(label: label, recorder: recorder, server: server, writer: writer)
            await closeClients(channels)
        }
        let server = try ServerProcess(executable: options.server, mode: "dbwatch", rows: 1)
        defer { server.stop() }
        let control = HTTPControl(port: server.port, group: group)
        let label = "serve \(clients) in-process DBWatch, POST writes"
        let recorder = Recorder(clients: clients)
        let start = nowNanoseconds()
        let channels = try await connectClients(
            count: clients, path: { _ in "/board/events" }, port: server.port, group: group, recorder: recorder)
        results.add("\(label): connect+first value, s", Double(nowNanoseconds() - start) / 1e9)
        try await Task.sleep(for: .milliseconds(500))
        var cpuStart = try await control.stats().cpu
        try await measureFanOut(label: label, recorder: recorder, after: 0) {
            cpuStart = try await control.stats().cpu
        } write: { round in
            try await control.write("/board/write/\(round)")
        }
        let after = try await control.stats()
        results.add("\(label): server CPU per write, ms", Double(after.cpu - cpuStart) / 1e6 / Double(options.writes))
        await closeClients(channels)
    }

    /// `dbwatch serve FILE --port 0 --quiet` plus `arguments` (`executable`
    /// by default `--dbwatch`'s), on a new board in a temporary directory,
    /// and this process's writer of the board. Stop the server and close
    /// the writer when done.
    func serveBoard(
        _ arguments: [String], executable: String? = nil, name: String
    ) throws -> (writer: ExternalWriter, server: ServerProcess) {
        let directory = try ServerProcess.temporaryDirectory()
        let writer = try ExternalWriter(path: directory + "/board.sqlite")
        do {
            let server = try ServerProcess(
                executable: executable ?? options.dbwatch,
                arguments: ["serve", directory + "/board.sqlite", "--port", "0", "--quiet"] + arguments,
                directory: directory, name: name, port: Self.servedPort)
            return (writer, server)
        } catch {
            writer.close()
            throw error
        }
    }

    /// The arguments of ``serveQuery`` as the query `board`.
    static var boardQueryArguments: [String] { ["--query", "board=\(serveQuery)"] }

    /// The port in `dbwatch serve`'s first line, `Serving FILE at http://127.0.0.1:P/`.
    static func servedPort(_ line: Substring) -> Int? {
        guard let range = line.range(of: "http://127.0.0.1:", options: .backwards) else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }
}

/// A connection of this process to a new WAL database with the board of
/// `dbwatch-bench-server` (`meta` and ten players), which makes its writes.
final class ExternalWriter {
    private var connection: OpaquePointer?

    init(path: String) throws {
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK
        else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(connection)
            throw LoadError(description: "cannot open \(path): \(message)")
        }
        sqlite3_busy_timeout(connection, 5_000)
        let players = (1...10).map { "(\($0), 'player number \($0)', \(1_000 - $0))" }.joined(separator: ", ")
        do {
            try execute(
                """
                PRAGMA journal_mode = WAL;
                PRAGMA synchronous = NORMAL;
                CREATE TABLE meta (id INTEGER PRIMARY KEY, round INTEGER NOT NULL);
                CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL);
                INSERT INTO meta (id, round) VALUES (1, 0);
                INSERT INTO player (id, name, score) VALUES \(players);
                """)
        } catch {
            close()
            throw error
        }
    }

    /// The write of workload 1 (as `POST /board/write/:round`): the round,
    /// and one player's score, in one transaction. Returns `CLOCK_MONOTONIC`
    /// right after `COMMIT` returns.
    func write(round: Int) throws -> UInt64 {
        try execute(
            """
            BEGIN IMMEDIATE;
            UPDATE meta SET round = \(round) WHERE id = 1;
            UPDATE player SET score = score + 1 WHERE id = \(round % 10 + 1);
            """)
        try execute("COMMIT")
        return nowNanoseconds()
    }

    func execute(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(connection, sql, nil, nil, &error) == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(error)
            throw LoadError(description: "SQLite: \(message)")
        }
    }

    func close() {
        sqlite3_close_v2(connection)
        connection = nil
    }
}
