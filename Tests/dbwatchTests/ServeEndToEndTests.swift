import DBWatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `dbwatch serve` run as a separate process, read with a real HTTP client,
/// while the stock `sqlite3` shell writes the database from another process.
@Suite("dbwatch serve, end to end", RequiredProgram.sqlite3.trait)
struct ServeEndToEndTests {
    static let top = "top=SELECT name, score FROM player ORDER BY score DESC, name LIMIT :n"
    static let teams = "teams=SELECT team, sum(score) AS total FROM player GROUP BY team ORDER BY team"

    /// A database in WAL mode with three players, written by `sqlite3`.
    func makePlayers(in scratch: TemporaryDirectory) throws -> String {
        let path = scratch.file("game.sqlite")
        try Shell.sqlite(
            """
            PRAGMA journal_mode = WAL;
            CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL, team TEXT);
            INSERT INTO player (name, score, team) VALUES ('Arthur', 100, 'red'), ('Barbara', 80, 'blue'),
                ('Craig', 50, 'red');
            """, on: path)
        return path
    }

    /// Writes like an application would: `sqlite3` with a busy timeout.
    func write(_ sql: String, on path: String) throws {
        try Shell.run(Shell.sqlite3, ["-bail", "-cmd", ".timeout 5000", path, sql])
    }

    /// A running `serve` and the address it printed.
    struct Served {
        let run: ChildProcess
        let url: String
    }

    /// Starts `serve` on any free port and waits for its address.
    func serve(_ path: String, _ arguments: [String]) async throws -> Served {
        let run = try DBWatchRun.start(["serve", path, "--port", "0", "--interval", "0.1"] + arguments)
        let snapshot = try await run.wait(for: "the address") { $0.stdout.contains("/\n") || $0.isFinished }
        guard let match = snapshot.stdout.firstMatch(of: /http:\/\/127\.0\.0\.1:\d+\//) else {
            run.kill()
            throw HTTPTestError("no address printed\n\(snapshot)")
        }
        return Served(run: run, url: String(match.output))
    }

    @Test(.hangLimit(minutes: 1))
    func firstValueAtOnceThenUpdateAfterAnExternalCommit() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.top])
            defer { served.run.kill() }
            let stream = try await EventStream.open(served.url + "queries/top/events?n=2")
            #expect(stream.status == 200)
            let first = try await stream.nextEvent()
            #expect(first.event == nil)
            #expect(try first.json["columns"] as? [String] == ["name", "score"])
            #expect(try first.rows.map { $0[0] as? String } == ["Arthur", "Barbara"])
            let firstVersion = try #require(first.id?.split(separator: "-").first.flatMap { Int($0) })

            try write("UPDATE player SET score = 200 WHERE name = 'Craig'", on: path)
            let second = try await stream.nextEvent()
            #expect(try second.rows.map { $0[0] as? String } == ["Craig", "Arthur"])
            #expect(try second.rows.first?[1] as? Int == 200)
            #expect(try #require(second.id?.split(separator: "-").first.flatMap { Int($0) }) > firstVersion)
        }
    }

    @Test(.hangLimit(minutes: 1))
    func aClientResumingWithTheValueItHoldsGetsOnlyTheNextValue() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.teams])
            defer { served.run.kill() }
            let url = served.url + "queries/teams/events"
            let holder = try await EventStream.open(url)
            let held = try await holder.nextEvent()
            let heldID = try #require(held.id)
            let resumed = try await EventStream.open(url, lastEventID: heldID)
            let stale = try await EventStream.open(url, lastEventID: "1-0")
            // A client holding another value gets the current one at once.
            #expect(try await stale.nextEvent().data == held.data)

            try write("UPDATE player SET score = 81 WHERE name = 'Barbara'", on: path)
            let next = try await holder.nextEvent()
            #expect(next.data != held.data)
            // The resumed client's first event is the new value, not the one it held.
            #expect(try await resumed.nextEvent() == next)
        }
    }

    @Test(.hangLimit(minutes: 1))
    func currentValueAndQueryListAreJSON() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.top, "--query", Self.teams])
            defer { served.run.kill() }
            let current = try await fetch(served.url + "queries/teams")
            #expect(current.status == 200)
            #expect(current.contentType == "application/json; charset=utf-8")
            #expect(current.body == #"{"columns":["team","total"],"rows":[["blue",80],["red",150]]}"#)

            let list = try await fetch(served.url + "queries")
            #expect(list.status == 200)
            let queries = try #require(try JSONSerialization.jsonObject(with: Data(list.body.utf8)) as? [[String: Any]])
            #expect(queries.map { $0["name"] as? String } == ["top", "teams"])
            #expect(queries[0]["sql"] as? String == "SELECT name, score FROM player ORDER BY score DESC, name LIMIT :n")
            #expect(queries[0]["parameters"] as? [String] == ["n"])
            #expect(queries[1]["parameters"] as? [String] == [])
            #expect((queries[0]["observes"] as? [String: [String]]) == ["main.player": ["name", "score"]])
            #expect((queries[1]["observes"] as? [String: [String]]) == ["main.player": ["score", "team"]])
            // No key: neither result holds player's rowid.
            #expect(queries.allSatisfy { $0["key"] is NSNull })
        }
    }

    @Test(.hangLimit(minutes: 1))
    func parametersAreTypedAsArgTypesThem() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(
                path,
                [
                    "--query", Self.top, "--query", "kind=SELECT typeof(:v) AS type, :v AS value",
                ])
            defer { served.run.kill() }
            let two = try jsonObject(try await fetch(served.url + "queries/top?n=2").body)
            #expect((two["rows"] as? [[Any]])?.count == 2)
            let one = try jsonObject(try await fetch(served.url + "queries/top?n=1").body)
            #expect((one["rows"] as? [[Any]])?.count == 1)
            for (value, type) in [
                ("42", "integer"), ("1.5", "real"), ("NULL", "null"), ("%27007%27", "text"), ("abc", "text"),
            ] {
                let body = try jsonObject(try await fetch(served.url + "queries/kind?v=\(value)").body)
                #expect((body["rows"] as? [[Any]])?.first?.first as? String == type, "\(value)")
            }
            let quoted = try jsonObject(try await fetch(served.url + "queries/kind?v=%27007%27").body)
            #expect((quoted["rows"] as? [[Any]])?.first?.last as? String == "007")
            // As a browser's form (and the page's URLSearchParams) encodes
            // them: `+` is a space, a key may be percent-encoded, empty
            // segments are nothing.
            let spaced = try jsonObject(try await fetch(served.url + "queries/kind?&%76=Bob+Smith%2B&").body)
            #expect((spaced["rows"] as? [[Any]])?.first?.last as? String == "Bob Smith+")
        }
    }

    @Test(.hangLimit(minutes: 1))
    func badParametersAndUnknownPathsAreJSONErrors() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.top])
            defer { served.run.kill() }
            let cases: [(path: String, status: Int, message: String)] = [
                ("queries/top", 400, "query top needs the parameter n"),
                ("queries/top?n=1&x=2", 400, "unknown parameter x for query top, which takes n"),
                ("queries/top?n=1&n=2", 400, "parameter n is given twice"),
                ("queries/top/events", 400, "query top needs the parameter n"),
                ("queries/nope", 404, "no query named nope; the queries are listed at /queries"),
                ("queries/nope/events", 404, "no query named nope; the queries are listed at /queries"),
                ("other", 404, "no such path: /other; the queries are listed at /queries"),
            ]
            for item in cases {
                let answer = try await fetch(served.url + item.path)
                #expect(answer.status == item.status, "\(item.path)")
                #expect(answer.contentType == "application/json; charset=utf-8", "\(item.path)")
                #expect(try jsonObject(answer.body)["message"] as? String == item.message, "\(item.path)")
            }
            let post = try await fetch(served.url + "queries", method: .POST)
            #expect(post.status == 405)
            #expect(try jsonObject(post.body)["message"] as? String == "only GET is served: POST /queries is not")
            // Values the SQL cannot take, or that are not text, are the client's fault.
            let badValues: [(path: String, message: String)] = [
                ("queries/top?n=abc", "datatype mismatch"),
                ("queries/top?n=%FF", "the query string is not percent-encoded UTF-8: n=%FF"),
                ("queries/top?n=%C3", "the query string is not percent-encoded UTF-8: n=%C3"),
                ("queries/top?n=1&", ""),
            ]
            for item in badValues {
                let answer = try await fetch(served.url + item.path)
                if item.message.isEmpty {
                    #expect(answer.status == 200, "\(item.path)")
                    continue
                }
                #expect(answer.status == 400, "\(item.path): \(answer.body)")
                #expect(try jsonObject(answer.body)["message"] as? String == item.message, "\(item.path)")
            }
            let beyond = try await fetch(served.url + "queries/top?n=99999999999999999999")
            #expect(beyond.status == 400)
            #expect(try (jsonObject(beyond.body)["message"] as? String)?.contains("64-bit") == true)
        }
    }

    @Test(.hangLimit(minutes: 1))
    func refusedOrBadQueriesStopServeBeforeItListens() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let cases: [(query: String, status: Int32, error: String)] = [
                ("wipe=DELETE FROM player", 67, "refused"),
                ("attach=ATTACH 'x.sqlite' AS x", 67, "refused"),
                ("top=SELECT * FROM player WHERE id = ?", 64, "need names"),
                ("missing=SELECT * FROM nope", 65, "no such table: nope"),
                (
                    "slow=WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", 68,
                    "longer than the time limit"
                ),
            ]
            for item in cases {
                let snapshot = try await DBWatchRun.run(
                    ["serve", path, "--port", "0", "--time-limit", "0.5", "--query", item.query])
                #expect(snapshot.exitStatus == item.status, "\(item.query)\n\(snapshot)")
                #expect(snapshot.stdout.isEmpty, "\(snapshot)")
                #expect(snapshot.stderr.contains(item.error), "\(snapshot)")
            }
            #expect(try Shell.sqlite("SELECT count(*) FROM player", on: path) == "3\n")
        }
    }

    @Test(.hangLimit(minutes: 1))
    func addressInUseIsAClearMessageAndExit69() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.top])
            defer { served.run.kill() }
            let port = try #require(served.url.split(separator: ":").last?.dropLast())
            let snapshot = try await DBWatchRun.run(["serve", path, "--port", String(port), "--query", Self.top])
            #expect(snapshot.exitStatus == 69, "\(snapshot)")
            #expect(
                snapshot.stderr
                    == "dbwatch: cannot listen on 127.0.0.1:\(port): the address is already in use (another server?); "
                    + "choose another --port\n")
        }
    }

    @Test(.hangLimit(minutes: 1))
    func anUnknownHostIsExit69() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let snapshot = try await DBWatchRun.run([
                "serve", path, "--port", "0", "--host", "no-such-host.invalid", "--no-auth", "--query", Self.top,
            ])
            #expect(snapshot.exitStatus == 69, "\(snapshot)")
            #expect(snapshot.stderr == "dbwatch: cannot listen on no-such-host.invalid:0: no such host or address\n")
        }
    }

    @Test(.hangLimit(minutes: 1))
    func sigtermEndsEveryStreamAndExits0Promptly() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.top, "--query", Self.teams])
            defer { served.run.kill() }
            var streams: [EventStream] = []
            for query in ["top/events?n=1", "top/events?n=1", "teams/events"] {
                let stream = try await EventStream.open(served.url + "queries/" + query)
                _ = try await stream.nextEvent()
                streams.append(stream)
            }
            // One line per client connecting, on standard error.
            _ = try await served.run.wait(for: "3 connections logged") {
                $0.stderr.components(separatedBy: " connected from ").count == 4
            }
            let start = ContinuousClock.now
            served.run.send(SIGTERM)
            for stream in streams {
                let end = try await stream.nextEvent()
                #expect(end.event == "end")
                #expect(end.data == #"{"reason":"shutdown"}"#)
                #expect(try await stream.next() == nil)
            }
            let snapshot = try await served.run.waitForExit(timeout: 10)
            let elapsed = ContinuousClock.now - start
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            // The process exits by itself well within the 2 s after which
            // it would exit anyway, saying "did not stop" (0.3 s alone; the
            // bound is loose for a loaded machine running every test).
            #expect(!snapshot.stderr.contains("did not stop"), "\(snapshot)")
            #expect(elapsed < .seconds(10), "exit took \(elapsed)")
            #expect(snapshot.stderr.components(separatedBy: " left: stream ended").count == 4, "\(snapshot)")
        }
    }

    @Test(.hangLimit(minutes: 1))
    func quietLogsNoClientAndMaxClientsRefusesOneMore() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.teams, "--quiet", "--max-clients", "1"])
            defer { served.run.kill() }
            let first = try await EventStream.open(served.url + "queries/teams/events")
            _ = try await first.nextEvent()
            let second = try await EventStream.open(served.url + "queries/teams/events")
            #expect(second.status == 503)
            #expect(
                try jsonObject(try await second.remainingBody())["message"] as? String
                    == "too many clients: this server takes 1 streams at once")
            served.run.interrupt()
            let snapshot = try await served.run.waitForExit(timeout: 10)
            #expect(snapshot.exitStatus == 0)
            #expect(snapshot.stderr.isEmpty, "\(snapshot)")
        }
    }

    @Test(.hangLimit(minutes: 1))
    func theCurrentValueOfAReplacedOrDeletedFileIsA503NotItsOldValue() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.teams])
            defer { served.run.kill() }
            #expect(try await fetch(served.url + "queries/teams").status == 200)
            let replacement = scratch.file("new.sqlite")
            try Shell.sqlite("CREATE TABLE player (score, team); INSERT INTO player VALUES (1, 'new')", on: replacement)
            #expect(rename(replacement, path) == 0)
            // No stream is open to notice: the answer itself must not be the old file's value.
            for _ in 0..<3 {
                let answer = try await fetch(served.url + "queries/teams")
                #expect(answer.status == 503, "\(answer.body)")
                #expect(
                    try jsonObject(answer.body)["message"] as? String == "the database file was replaced or deleted")
            }
        }
    }

    @Test(.hangLimit(minutes: 1))
    func replacedDatabaseFileEndsStreamsWithAnErrorEvent() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serve(path, ["--query", Self.teams])
            defer { served.run.kill() }
            let stream = try await EventStream.open(served.url + "queries/teams/events")
            _ = try await stream.nextEvent()
            let replacement = scratch.file("new.sqlite")
            try Shell.sqlite("CREATE TABLE player (score, team)", on: replacement)
            #expect(rename(replacement, path) == 0)
            let error = try await stream.nextEvent()
            #expect(error.event == "error")
            #expect(try error.json["message"] as? String == "the database file was replaced or deleted")
            #expect(try await stream.nextEvent().event == "end")
            #expect(try await stream.next() == nil)
        }
    }
}
