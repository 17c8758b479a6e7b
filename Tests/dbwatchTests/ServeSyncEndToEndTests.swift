import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// `dbwatch serve`'s sync protocol, the server run as a separate process
/// and the database written by the `sqlite3` shell from another: keyed
/// changes of a served query over `GET /sync` and its POSTs, and
/// `/dbwatch.js`.
@Suite("dbwatch serve: the sync protocol, end to end", RequiredProgram.sqlite3.trait)
struct ServeSyncEndToEndTests {
    static let top = "top=SELECT id, name, score FROM player ORDER BY score DESC, name LIMIT :n"

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

    func write(_ sql: String, on path: String) throws {
        try Shell.run(Shell.sqlite3, ["-bail", "-cmd", ".timeout 5000", path, sql])
    }

    /// Starts `serve` on any free port; returns it and its base URL (no trailing slash).
    func serve(_ path: String, _ arguments: [String]) async throws -> (ChildProcess, String) {
        let run = try DBWatchRun.start(["serve", path, "--port", "0", "--interval", "0.1"] + arguments)
        let snapshot = try await run.wait(for: "the address") { $0.stdout.contains("/\n") || $0.isFinished }
        guard let match = snapshot.stdout.firstMatch(of: /http:\/\/127\.0\.0\.1:\d+/) else {
            run.kill()
            throw HTTPTestError("no address printed\n\(snapshot)")
        }
        return (run, String(match.output))
    }

    /// The rows a client holds, as `[id, name, score]` text.
    func rows(_ results: SyncResults) throws -> [[String]] {
        try (results.results["top"]?.rows ?? []).map { row in
            let cells = try #require(try JSONSerialization.jsonObject(with: row.row) as? [Any])
            return cells.map { "\($0)" }
        }
    }

    @Test(.hangLimit(minutes: 1))
    func aServedQueryIsASnapshotThenKeyedChangesAfterAnotherProcessCommits() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let (run, url) = try await serve(path, ["--query", Self.top])
            defer { run.kill() }
            let client = try await SyncTestClient.connect(url)
            #expect(try await client.subscribe("top", to: "top", params: ["n": "2"]) == 202)
            var results = SyncResults()
            let first = try await client.next()
            #expect(first.changes["top"]?["columns"] as? [String] == ["id", "name", "score"])
            try results.apply(first)
            #expect(try rows(results) == [["1", "Arthur", "100"], ["2", "Barbara", "80"]])

            try write("UPDATE player SET score = 200 WHERE name = 'Craig'", on: path)
            let second = try await client.next()
            #expect(second.changes["top"]?["kind"] as? String == "changes")
            #expect(try #require(second.sequence) > (try #require(first.sequence)))
            try results.apply(second)
            #expect(try rows(results) == [["3", "Craig", "200"], ["1", "Arthur", "100"]])

            let unknown = try await client.send(["type": "subscribe", "id": "x", "query": "nope"])
            #expect(unknown.status == 404)
            let missing = try await client.send(["type": "subscribe", "id": "y", "query": "top"])
            #expect(missing.status == 400, "a missing parameter")

            let script = try await fetch(url + "/dbwatch.js")
            #expect(script.status == 200 && script.body.contains("export function connect"))
        }
    }
    @Test(.hangLimit(minutes: 1))
    func aCatchUpOverPlainHTTPBringsAClientForwardAndItsCompleteAnswersNeverChange() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let (run, url) = try await serve(path, ["--query", Self.top])
            defer { run.kill() }
            // A subscriber keeps the query observed and tells each commit's value.
            let client = try await SyncTestClient.connect(url)
            try await client.subscribe("top", to: "top", params: ["n": "2"])
            var results = SyncResults()
            let first = try await client.next()
            try results.apply(first)
            var valueAt = [try #require(first.sequence): try #require(results.results["top"])]
            var last = first
            for score in [200, 300, 400, 500, 600] {
                try write("UPDATE player SET score = \(score) WHERE name = 'Craig'", on: path)
                last = try await client.next()
                try results.apply(last)
                let value = try #require(results.results["top"])
                valueAt[try #require(last.sequence)] = value
            }
            let epoch = try #require(first.position?.split(separator: "/").first)
            let final = try #require(results.results["top"])

            // From each position a client may hold: complete answers, then one that is not.
            var complete = 0
            for (start, value) in valueAt {
                var held = value
                var since = "\(epoch)/\(start)"
                for _ in 0..<70 {
                    let answer = try await CatchUpAnswer.fetch(url, query: "top", params: ["n": "2"], since: since)
                    #expect(answer.status == 200, "\(answer.body)")
                    held = try answer.applied(to: held)
                    guard answer.complete == true else {
                        #expect(answer.headers["cache-control"] == "no-store")
                        #expect(answer.position == last.position)
                        break
                    }
                    complete += 1
                    #expect(answer.headers["cache-control"] == "public, max-age=31536000, immutable")
                    let again = try await CatchUpAnswer.fetch(url, query: "top", params: ["n": "2"], since: since)
                    #expect(again.body == answer.body, "a complete answer never changes")
                    since = try #require(answer.position)
                }
                #expect(held == final, "from \(start): the steps give the subscriber's value")
            }
            #expect(complete >= 1)

            let unknown = try await CatchUpAnswer.fetch(url, query: "nope", since: last.position)
            #expect(unknown.status == 404 && unknown.reason == "unknownQuery")
            let bad = try await CatchUpAnswer.fetch(url, query: "top", params: ["n": "2"], since: "1042")
            #expect(bad.status == 400 && bad.reason == "badRequest")
            let missing = try await CatchUpAnswer.fetch(url, query: "top", since: last.position)
            #expect(missing.status == 400, "a missing parameter")
            let sequence = try #require(last.sequence)
            let other = try await CatchUpAnswer.fetch(
                url, query: "top", params: ["n": "2"], since: "another-epoch/\(sequence)")
            #expect(other.status == 410 && other.reason == "positionTooOld")
            #expect(other.headers["cache-control"] == "no-store")
        }
    }
}
