import DBWatchTestSupport
import Foundation
import Testing

/// `dbwatch serve`'s bounds on what a client can make it hold, run as a
/// separate process and reached over real sockets: parameters' types and
/// ranges, distinct observations, request heads, connections, and clients
/// that read nothing.
@Suite("dbwatch serve: limits, end to end", RequiredProgram.sqlite3.trait)
struct ServeLimitsEndToEndTests {
    static let top = "top=SELECT name, score FROM player ORDER BY score DESC, name LIMIT :n"

    /// A database in WAL mode with three players.
    func makePlayers(in scratch: TemporaryDirectory) throws -> String {
        let path = scratch.file("game.sqlite")
        try Shell.sqlite(
            """
            PRAGMA journal_mode = WAL;
            CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL);
            INSERT INTO player (name, score) VALUES ('Arthur', 100), ('Barbara', 80), ('Craig', 50);
            """, on: path)
        return path
    }

    /// A running `serve`, its address and port.
    struct Served {
        let run: ChildProcess
        let url: String
        let port: Int
    }

    /// Starts `serve` on any free port and waits for its address.
    func serve(_ path: String, _ arguments: [String]) async throws -> Served {
        let run = try DBWatchRun.start(["serve", path, "--port", "0", "--interval", "0.1"] + arguments)
        let snapshot = try await run.wait(for: "the address") { $0.stdout.contains("/\n") || $0.isFinished }
        guard let match = snapshot.stdout.firstMatch(of: /http:\/\/127\.0\.0\.1:(\d+)\//), let port = Int(match.1)
        else {
            run.kill()
            throw HTTPTestError("no address printed\n\(snapshot)")
        }
        return Served(run: run, url: String(match.output.0), port: port)
    }

    /// The head of the answer to `GET path` on a new connection, as text.
    func head(of path: String, port: Int) async throws -> String {
        let socket = try TCPTestSocket(port: port)
        try socket.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let bytes = try #require(try await socket.receive(seconds: 30))
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test(.hangLimit(minutes: 1))
    func aParameterOutsideItsDeclaredRangeIsA400NamingIt() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(
                path,
                [
                    "--query", Self.top, "--param", "top.n=integer:1...2",
                    "--query", "all=SELECT name FROM player ORDER BY name LIMIT :n",
                ])
            defer { served.run.kill() }
            for query in ["n=-1", "n=0", "n=3", "n=abc", "n=1.5"] {
                for suffix in ["", "/events"] {
                    let answer = try await fetch(served.url + "queries/top\(suffix)?\(query)")
                    #expect(answer.status == 400, "\(query)\(suffix)")
                    let message = try jsonObject(answer.body)["message"] as? String ?? ""
                    #expect(message.hasPrefix("parameter n "), "\(query): \(message)")
                }
            }
            let two = try jsonObject(try await fetch(served.url + "queries/top?n=2").body)
            #expect((two["rows"] as? [[Any]])?.count == 2)
            // Without a bound, SQLite reads a negative LIMIT as none: every row.
            let all = try jsonObject(try await fetch(served.url + "queries/all?n=-1").body)
            #expect((all["rows"] as? [[Any]])?.count == 3)
            let list = try #require(
                try JSONSerialization.jsonObject(with: Data(try await fetch(served.url + "queries").body.utf8))
                    as? [[String: Any]])
            #expect(list[0]["bounds"] as? [String: String] == ["n": "integer:1...2"])
            #expect(list[1]["bounds"] as? [String: String] == [:])
        }
    }

    @Test(.hangLimit(minutes: 1))
    func aParamNamingNoQueryOrNoParameterStopsServeBeforeItListens() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            for (bound, error) in [
                ("nope.n=integer", "there is no --query nope"), ("top.m=integer", "the query has no parameter :m"),
            ] {
                let run = try await DBWatchRun.run([
                    "serve", path, "--port", "0", "--query", Self.top, "--param", bound,
                ])
                #expect(run.exitStatus == 64, "\(bound)\n\(run)")
                #expect(run.stderr.contains(error), "\(bound)\n\(run)")
                #expect(!run.stdout.contains("Serving"))
            }
        }
    }

    @Test(.hangLimit(minutes: 1))
    func aNewDistinctStreamPastMaxObservationsIsA503WithRetryAfter() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.top, "--max-observations", "1"])
            defer { served.run.kill() }
            let open = try await EventStream.open(served.url + "queries/top/events?n=1")
            let first = try await open.nextEvent()
            let refused = try await head(of: "/queries/top/events?n=2", port: served.port)
            #expect(refused.hasPrefix("HTTP/1.1 503"), "\(refused)")
            #expect(refused.lowercased().contains("retry-after: 1"), "\(refused)")
            // The same request joins the observation; a one-shot starts none.
            let joining = try await EventStream.open(served.url + "queries/top/events?n=1")
            #expect(try await joining.nextEvent().data == first.data)
            #expect(try await fetch(served.url + "queries/top?n=3").status == 200)
        }
    }

    @Test(.hangLimit(minutes: 2))
    func aRequestHeadSentAByteAtATimeIsCutOff() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.top, "--request-timeout", "1"])
            defer { served.run.kill() }
            let slow = try TCPTestSocket(port: served.port)
            try slow.send("GET /queries/top?n=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            var closed = false
            // One byte every 200 ms, 150 of them: never 1 s without a byte, so
            // a timeout that each byte restarted would never cut it off. A
            // loaded machine only cuts it off later, within the 150 bytes.
            for _ in 0..<150 where !closed {
                do { try slow.send("a") } catch { closed = true }
                if try await slow.waitForClose(seconds: 0.2) { closed = true }
            }
            #expect(closed, "not cut off while sending 150 bytes, one every 200 ms")
        }
    }

    @Test(.hangLimit(minutes: 2))
    func connectionsPastMaxConnectionsWaitUntilOneCloses() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            // A request timeout far longer than the test: the held connections stay open.
            let served = try await serve(
                path, ["--query", Self.top, "--max-connections", "2", "--request-timeout", "600"])
            defer { served.run.kill() }
            var held: [TCPTestSocket] = []
            for _ in 0..<2 {
                let socket = try TCPTestSocket(port: served.port)
                try socket.send("GET /queries/top?n=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                let answer = try #require(try await socket.receive(seconds: 30))
                #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
                held.append(socket)
            }
            let third = try TCPTestSocket(port: served.port)
            try third.send("GET /queries/top?n=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            // Not answered while two are open (a window, not an ordering).
            #expect(try await third.receive(seconds: 1) == [])
            held.removeFirst()
            let answer = try #require(try await third.receive(seconds: defaultTestTimeout))
            #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
            withExtendedLifetime(held) {}
        }
    }

    @Test(.hangLimit(minutes: 2))
    func clientsThatReadNothingAreDisconnectedWhateverTheSizeOfEvents() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.top, "--stall-timeout", "1"])
            defer { served.run.kill() }
            let clients = try (0..<5).map { _ in try TCPTestSocket(port: served.port, receiveBuffer: 4096) }
            for client in clients {
                try client.send("GET /queries/top/events?n=3 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            }
            _ = try await served.run.wait(for: "5 clients") {
                $0.stderr.components(separatedBy: " connected ").count > 5
            }
            // Small events (about 100 bytes), one per write of the sqlite3
            // shell: far from filling a send buffer.
            let start = ContinuousClock.now
            var score = 1_000
            while served.run.snapshot.stderr.components(separatedBy: " left: ").count <= 5 {
                try #require(
                    ContinuousClock.now - start < .seconds(isThreadSanitized ? 90 : 30),
                    "clients that read nothing still connected\n\(served.run.snapshot)")
                score += 1
                try Shell.run(
                    Shell.sqlite3,
                    ["-bail", "-cmd", ".timeout 5000", path, "UPDATE player SET score = \(score) WHERE name = 'Craig'"])
            }
            withExtendedLifetime(clients) {}
        }
    }
}
