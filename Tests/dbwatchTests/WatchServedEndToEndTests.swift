import DBWatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `dbwatch watch http://…/queries/NAME`: a query that `dbwatch serve`
/// serves, watched from another process over a real socket, printed as a
/// local query's values are.
@Suite("dbwatch watch of a served query, end to end", RequiredProgram.sqlite3.trait)
struct WatchServedEndToEndTests {
    let serving = ServeEndToEndTests()
    /// Integers, reals, text and blobs, keyed by `id`.
    static let players = "players=SELECT id, name, score, ratio, badge FROM player ORDER BY score DESC, id LIMIT :n"
    static let sql = "SELECT id, name, score, ratio, badge FROM player ORDER BY score DESC, id LIMIT 10"

    /// Three players with a real and a blob each.
    func makePlayers(in scratch: TemporaryDirectory) throws -> String {
        let path = scratch.file("game.sqlite")
        try Shell.sqlite(
            """
            PRAGMA journal_mode = WAL;
            CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL, ratio REAL, badge BLOB);
            INSERT INTO player (name, score, ratio, badge) VALUES
                ('Arthur', 100, 1.0, x'00ff'), ('Barbara', 80, 2.5, NULL), ('Craig', 50, -0.125, x'');
            """, on: path)
        return path
    }

    /// The records of an ndjson output, without their `seq` and `time`.
    func records(_ output: String) throws -> [[String: Any]] {
        try output.split(separator: "\n").map { line in
            var record = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            record["seq"] = nil
            record["time"] = nil
            return record
        }
    }

    /// The JSON text of `record`, keys sorted, for comparing two outputs.
    func canonical(_ record: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test(.hangLimit(minutes: 1))
    func aServedQueryPrintsWhatTheSameLocalQueryPrintsThenEveryChange() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serving.serve(path, ["--query", Self.players])
            defer { served.run.kill() }
            let local = try await DBWatchRun.start(["watch", path, Self.sql, "--once", "--format", "ndjson"])
                .waitForExit()
            #expect(local.exitStatus == 0, "\(local)")

            let run = try DBWatchRun.start([
                "watch", served.url + "queries/players?n=10", "--format", "ndjson", "--count", "2",
            ])
            defer { run.kill() }
            let first = try await run.wait(forLines: 1)
            #expect(try canonical(try records(first.stdout)[0]) == canonical(try records(local.stdout)[0]))
            try serving.write("UPDATE player SET score = 200, ratio = 0.5 WHERE name = 'Craig'", on: path)
            let end = try await run.waitForExit()
            #expect(end.exitStatus == 0, "\(end)")
            let second = try #require(try records(end.stdout).last?["rows"] as? [[Any]])
            #expect(second.first?[1] as? String == "Craig")
            #expect(second.first?[2] as? Int == 200)
            #expect(second.first?[3] as? Double == 0.5)
            #expect((second.first?[4] as? [String: String])?["base64"] == "")
        }
    }

    @Test(.hangLimit(minutes: 1))
    func onceAndChangesWorkAsForALocalQuery() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let served = try await serving.serve(path, ["--query", Self.players])
            defer { served.run.kill() }
            let once = try await DBWatchRun.start([
                "watch", served.url + "queries/players?n=2", "--once", "--format", "table",
            ]).waitForExit()
            #expect(once.exitStatus == 0, "\(once)")
            #expect(once.stdout.contains("Arthur") && once.stdout.contains("Barbara"), "\(once)")
            #expect(!once.stdout.contains("Craig"), "\(once)")
            #expect(once.stdout.contains("(2 rows)"), "\(once)")

            let changes = try DBWatchRun.start([
                "watch", served.url + "queries/players?n=10", "--changes", "--format", "ndjson", "--count", "2",
            ])
            defer { changes.kill() }
            _ = try await changes.wait(forLines: 1)
            try serving.write("UPDATE player SET score = 90 WHERE name = 'Barbara'", on: path)
            let end = try await changes.waitForExit()
            #expect(end.exitStatus == 0, "\(end)")
            let second = try #require(try records(end.stdout).last)
            // The key comes from the server's list of queries.
            #expect(second["key"] as? [String] == ["id"])
            #expect((second["added"] as? [Any])?.isEmpty == true)
            let changed = try #require(second["changed"] as? [[String: [Any]]])
            #expect(changed.count == 1)
            #expect(changed.first?["new"]?[2] as? Int == 90)
        }
    }

    @Test(.hangLimit(minutes: 1))
    func refusalsAndUnreachableServersEndWithTheirExitCodes() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let tokens = scratch.file("tokens.txt")
            try "a-token\n".write(toFile: tokens, atomically: true, encoding: .utf8)
            let served = try await serving.serve(path, ["--query", Self.players, "--auth-token-file", tokens])
            defer { served.run.kill() }
            let url = served.url + "queries/players?n=1"

            let withoutToken = try await DBWatchRun.start(["watch", url, "--once"]).waitForExit()
            #expect(withoutToken.exitStatus == 67, "\(withoutToken)")
            #expect(withoutToken.stderr.contains("(HTTP 401)"), "\(withoutToken)")

            let withToken = try await DBWatchRun.start(["watch", url, "--once", "--auth-token-file", tokens])
                .waitForExit()
            #expect(withToken.exitStatus == 0, "\(withToken)")
            #expect(withToken.stdout.contains("Arthur"), "\(withToken)")

            let unknown = try await DBWatchRun.start([
                "watch", served.url + "queries/nope", "--once", "--auth-token-file", tokens,
            ]).waitForExit()
            #expect(unknown.exitStatus == 66, "\(unknown)")
            #expect(unknown.stderr.contains("no query named nope"), "\(unknown)")

            // The stream's first event is the query's error: reported and
            // classified as the same error of a local query.
            let badParameter = try await DBWatchRun.start([
                "watch", served.url + "queries/players?n=many", "--auth-token-file", tokens,
            ]).waitForExit()
            #expect(badParameter.exitStatus == 65, "\(badParameter)")
            #expect(badParameter.stderr.contains("datatype mismatch"), "\(badParameter)")

            // A port nothing listens on: the server's, once it has exited.
            served.run.send(SIGTERM)
            #expect(try await served.run.waitForExit().exitStatus == 0)
            let unreachable = try await DBWatchRun.start(["watch", url, "--once"]).waitForExit()
            #expect(unreachable.exitStatus == 66, "\(unreachable)")
            #expect(unreachable.stderr.contains("cannot reach"), "\(unreachable)")

            let notAQuery = try await DBWatchRun.start(["watch", served.url + "elsewhere"]).waitForExit()
            #expect(notAQuery.exitStatus == 64, "\(notAQuery)")
            #expect(notAQuery.stderr.contains("/queries/NAME"), "\(notAQuery)")
        }
    }

    @Test(.hangLimit(minutes: 2))
    func aLostConnectionIsReopenedAndTheChangesMeanwhileArrive() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let first = try await serving.serve(path, ["--query", Self.players])
            defer { first.run.kill() }
            let port = try #require(first.url.firstMatch(of: /:(\d+)\//).map { String($0.1) })
            let run = try DBWatchRun.start(["watch", first.url + "queries/players?n=10", "--format", "ndjson"])
            defer { run.kill() }
            _ = try await run.wait(forLines: 1)

            first.run.send(SIGTERM)
            _ = try await first.run.waitForExit()
            _ = try await run.wait(forError: "reconnecting in")
            try serving.write("DELETE FROM player WHERE name = 'Arthur'", on: path)
            let second = try DBWatchRun.start([
                "serve", path, "--port", port, "--interval", "0.1", "--query", Self.players,
            ])
            defer { second.kill() }
            let resumed = try await run.wait(forLines: 2)
            let rows = try #require(try records(resumed.stdout).last?["rows"] as? [[Any]])
            #expect(rows.map { $0[1] as? String } == ["Barbara", "Craig"])
            #expect(resumed.stderr.contains("the server ended the stream (shutdown)"), "\(resumed)")

            run.send(SIGTERM)
            #expect(try await run.waitForExit().exitStatus == 0)
        }
    }
}
