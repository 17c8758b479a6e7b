import Foundation
import Testing
import DBWatchTestSupport

/// `dbwatch watch` run as a separate process against databases that the
/// stock `sqlite3` shell writes from yet another process.
@Suite("dbwatch watch, end to end", RequiredProgram.sqlite3.trait)
struct WatchEndToEndTests {
    /// A database with three players, written by `sqlite3`.
    func makePlayers(in scratch: TemporaryDirectory, wal: Bool = false) throws -> String {
        let path = scratch.file("game.sqlite")
        try Shell.sqlite(
            (wal ? "PRAGMA journal_mode = WAL;" : "")
                + """
                CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL);
                INSERT INTO player (name, score) VALUES ('Arthur', 100), ('Barbara', 80), ('Craig', 50);
                """, on: path)
        return path
    }

    /// Writes like an application would: `sqlite3` with a busy timeout.
    func write(_ sql: String, on path: String) throws {
        try Shell.run(Shell.sqlite3, ["-bail", "-cmd", ".timeout 5000", path, sql])
    }

    func records(_ snapshot: DBWatchRun.Snapshot) throws -> [[String: Any]] {
        try snapshot.lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
    }

    @Test func ndjsonFollowsCommitsOfAnotherProcess() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let run = try DBWatchRun.start([
                "watch", path, "SELECT id, name, score FROM player ORDER BY id", "--format", "ndjson", "--count", "3",
                "--interval", "0.1",
            ])
            defer { run.kill() }
            _ = try await run.wait(forLines: 1)
            try write("INSERT INTO player (name, score) VALUES ('Dana', 10)", on: path)
            _ = try await run.wait(forLines: 2)
            try write("UPDATE player SET score = 200 WHERE name = 'Barbara'", on: path)
            let snapshot = try await run.waitForExit()
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            let records = try records(snapshot)
            try #require(records.count == 3, "\(snapshot)")
            #expect(records.map { $0["seq"] as? Int } == [1, 2, 3])
            #expect(records.allSatisfy { $0["query"] == nil })
            for record in records {
                let time = try #require(record["time"] as? String)
                #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(time)")
                #expect(record["columns"] as? [String] == ["id", "name", "score"])
            }
            let rows = records.map { ($0["rows"] as? [[Any]])?.count }
            #expect(rows == [3, 4, 4])
            let last = try #require(records[2]["rows"] as? [[Any]])
            #expect(last[1][1] as? String == "Barbara")
            #expect(last[1][2] as? Int == 200)
        }
    }

    /// Text is compared and shown by its stored bytes: text that is not
    /// valid UTF-8 (FF then FE, both U+FFFD as a Swift string) and the two
    /// normalization forms of "é" (equal Swift strings) are each a change.
    @Test func textIsComparedAndShownByItsBytes() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("bytes.sqlite")
            try Shell.sqlite(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, CAST(x'ff' AS TEXT));",
                on: path)
            let run = try DBWatchRun.start([
                "watch", path, "SELECT id, v FROM t", "--format", "ndjson", "--count", "4", "--interval", "0.1",
            ])
            defer { run.kill() }
            _ = try await run.wait(forLines: 1)
            try write("UPDATE t SET v = CAST(x'fe' AS TEXT)", on: path)
            _ = try await run.wait(forLines: 2, timeout: 20)
            try write("UPDATE t SET v = CAST(x'c3a9' AS TEXT)", on: path)
            _ = try await run.wait(forLines: 3, timeout: 20)
            try write("UPDATE t SET v = CAST(x'65cc81' AS TEXT)", on: path)
            let snapshot = try await run.waitForExit(timeout: 20)
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            // Compared as bytes: Swift's == holds "\u{e9}" and "e\u{301}" equal.
            let rows = snapshot.lines.map { Array(($0.split(separator: "\"rows\":").last ?? "").utf8) }
            let expected = [
                #"[[1,{"text_base64":"/w=="}]]}"#, #"[[1,{"text_base64":"/g=="}]]}"#, "[[1,\"\u{e9}\"]]}",
                "[[1,\"e\u{301}\"]]}",
            ]
            #expect(rows == expected.map { Array($0.utf8) }, "\(snapshot)")
            // The table and CSV show each invalid byte escaped, as control characters.
            let sql = "SELECT CAST(x'61fe0962' AS TEXT) AS v"
            let table = try await DBWatchRun.run(["watch", path, sql, "--once", "--format", "table"])
            #expect(table.stdout.contains("a\\xfe\\tb"), "\(table)")
            let csv = try await DBWatchRun.run(["watch", path, sql, "--once", "--format", "csv"])
            #expect(csv.stdout == "v\r\na\\xfe\tb\r\n", "\(csv)")
        }
    }

    @Test func inotifyWakesTheWatchOfAWALDatabaseAtOnce() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch, wal: true)
            // A 60 s poll: only the file notification can deliver the change in time.
            let run = try DBWatchRun.start([
                "watch", path, "SELECT count(*) FROM player", "--format", "ndjson", "--count", "2", "--interval", "60",
            ])
            defer { run.kill() }
            _ = try await run.wait(forLines: 1)
            try write("INSERT INTO player (name, score) VALUES ('Dana', 10)", on: path)
            let snapshot = try await run.waitForExit(timeout: 20)
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            let counts = try records(snapshot).map { ($0["rows"] as? [[Int]])?.first?.first }
            #expect(counts == [3, 4])
        }
    }

    /// Another process that keeps one connection open and commits every
    /// 20 ms while the cores are busy: each commit is printed through
    /// inotify, none left to the 60 s poll (the commit's WAL write wakes the
    /// check before the commit is published in the `-shm` index).
    /// Skipped under the thread sanitizer, which makes latency meaningless.
    @Test(.disabled(if: isThreadSanitized, "measures latency under load"))
    func spacedCommitsOfAKeptConnectionArePrintedUnderLoad() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch, wal: true)
            let run = try DBWatchRun.start([
                "watch", path, "SELECT count(*) FROM player", "--format", "ndjson", "--interval", "60",
            ])
            defer { run.kill() }
            _ = try await run.wait(forLines: 1)
            let writer = try ChildProcess.start([Shell.sqlite3, "-bail", path], input: .pipe)
            defer {
                writer.closeInput()
                writer.blockingWaitForExit(seconds: defaultTestTimeout)
                writer.kill()
            }
            let commits = 25
            try await withCPULoad(threads: 2 * ProcessInfo.processInfo.activeProcessorCount) {
                for commit in 1...commits {
                    let insert = "INSERT INTO player (name, score) VALUES ('p\(commit)', \(commit));\n"
                    try writer.write(insert)
                    _ = try await run.wait(forLines: 1 + commit, timeout: 3)
                    try await Task.sleep(for: .milliseconds(20))  // the other process's pace
                }
            }
            let counts = try records(run.snapshot).map { ($0["rows"] as? [[Int]])?.first?.first }
            #expect(counts == Array(3...(3 + commits)))
        }
    }

    @Test func changesAreKeyedByPrimaryKey() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let run = try DBWatchRun.start([
                "watch", path, "SELECT id, name, score FROM player ORDER BY score DESC", "--changes", "--format",
                "ndjson", "--count", "4", "--interval", "0.1",
            ])
            defer { run.kill() }
            _ = try await run.wait(forLines: 1)
            try write("INSERT INTO player (name, score) VALUES ('Dana', 10)", on: path)
            _ = try await run.wait(forLines: 2)
            try write("UPDATE player SET score = 200 WHERE name = 'Craig'", on: path)
            _ = try await run.wait(forLines: 3)
            try write("DELETE FROM player WHERE name = 'Arthur'", on: path)
            let snapshot = try await run.waitForExit()
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            let records = try records(snapshot)
            try #require(records.count == 4, "\(snapshot)")
            #expect(records.allSatisfy { $0["key"] as? [String] == ["id"] })
            #expect((records[0]["added"] as? [[Any]])?.count == 3)
            #expect((records[1]["added"] as? [[Any]])?.first?[1] as? String == "Dana")
            let changed = try #require((records[2]["changed"] as? [[String: [Any]]])?.first)
            #expect(changed["old"]?[2] as? Int == 50)
            #expect(changed["new"]?[2] as? Int == 200)
            #expect((records[2]["added"] as? [Any])?.isEmpty == true)
            #expect((records[3]["removed"] as? [[Any]])?.first?[1] as? String == "Arthur")
        }
    }

    @Test func changesAsTextAndWithoutKey() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let run = try DBWatchRun.start([
                "watch", path, "SELECT name FROM player ORDER BY name", "--changes", "--format", "table", "--count",
                "2",
                "--interval", "0.1",
            ])
            defer { run.kill() }
            _ = try await run.wait(forOutput: "+ name='Craig'")
            try write("UPDATE player SET name = 'Zoe' WHERE name = 'Barbara'", on: path)
            let snapshot = try await run.waitForExit()
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            #expect(!snapshot.stdout.contains("\u{1B}"))
            let lines = snapshot.lines
            let second = try #require(lines.lastIndex { $0.hasPrefix("#2 ") })
            #expect(Array(lines[(second + 1)...]) == ["- name='Barbara'", "+ name='Zoe'"])
        }
    }

    @Test func tableCSVAndJSONOnce() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let sql = "SELECT name, score, NULL AS note FROM player ORDER BY score DESC"
            let table = try await DBWatchRun.run(["watch", path, sql, "--once", "--format", "table"])
            #expect(table.exitStatus == 0, "\(table)")
            #expect(
                table.stdout == """
                    name    │ score │ note
                    ────────┼───────┼─────
                    Arthur  │   100 │ NULL
                    Barbara │    80 │ NULL
                    Craig   │    50 │ NULL
                    (3 rows)

                    """)
            let narrow = try await DBWatchRun.run(
                ["watch", path, sql, "--once", "--format", "table"], environment: ["COLUMNS": "16"])
            #expect(narrow.lines.allSatisfy { $0.count <= 16 }, "\(narrow)")
            #expect(narrow.stdout.contains("…"))
            let csv = try await DBWatchRun.run(["watch", path, sql, "--once", "--format", "csv"])
            #expect(csv.stdout == "name,score,note\r\nArthur,100,\r\nBarbara,80,\r\nCraig,50,\r\n")
            let json = try await DBWatchRun.run(["watch", path, "SELECT x'00ff' AS b", "--once", "--format", "json"])
            #expect(json.stdout.contains("\"rows\": [\n    [{\"base64\": \"AP8=\"}]\n  ]"), "\(json)")
            let piped = try await DBWatchRun.run(["watch", path, "SELECT 1 AS one", "--once"])
            #expect(piped.stdout.hasPrefix("{\"seq\":1,"), "ndjson is the default into a pipe")
        }
    }

    @Test func changedCellsAreHighlightedWithColorAndNotWithNoColor() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let arguments = [
                "watch", path, "SELECT id, score FROM player ORDER BY id", "--format", "table", "--count", "2",
                "--interval", "0.1", "--color", "always",
            ]
            let run = try DBWatchRun.start(arguments)
            defer { run.kill() }
            _ = try await run.wait(forOutput: "(3 rows)")
            try write("UPDATE player SET score = 81 WHERE id = 2", on: path)
            let snapshot = try await run.waitForExit()
            #expect(snapshot.stdout.contains("\u{1B}[7m   81\u{1B}[27m"), "\(snapshot)")
            #expect(!snapshot.stdout.contains("\u{1B}[7m  100"))
            let noColor = try await DBWatchRun.run(
                ["watch", path, "SELECT id FROM player", "--once", "--format", "table"], environment: ["NO_COLOR": "1"])
            #expect(!noColor.stdout.contains("\u{1B}"))
        }
    }

    @Test func severalQueriesAreEachWatched() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let snapshot = try await DBWatchRun.run([
                "watch", path, "SELECT count(*) FROM player", "SELECT max(score) FROM player", "--once",
            ])
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            let records = try records(snapshot)
            #expect(Set(records.compactMap { $0["query"] as? Int }) == [1, 2])
            #expect(records.map { $0["seq"] as? Int } == [1, 2])
        }
    }

    @Test func argumentsBindAsNumbersOrText() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let snapshot = try await DBWatchRun.run([
                "watch", path, "SELECT typeof(?), typeof(?), typeof(?), typeof(?), ?", "--arg", "2", "--arg", "2.5",
                "--arg", "'2'", "--arg", "NULL", "--arg", "Arthur", "--once",
            ])
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            #expect(snapshot.stdout.contains(#""rows":[["integer","real","text","null","Arthur"]]"#), "\(snapshot)")
        }
    }

    @Test func aDeletedDatabaseEndsTheWatch() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let run = try DBWatchRun.start(["watch", path, "SELECT count(*) FROM player", "--interval", "0.1"])
            defer { run.kill() }
            _ = try await run.wait(forLines: 1)
            try FileManager.default.removeItem(atPath: path)
            let snapshot = try await run.waitForExit(timeout: 20)
            #expect(snapshot.exitStatus == 66, "\(snapshot)")
            #expect(snapshot.stderr.contains("replaced or deleted"), "\(snapshot)")
        }
    }

    /// Ctrl-C and SIGTERM end the watch at once, even while a query runs
    /// far from its time limit: the quick query prints, the endless one runs.
    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalEndsTheWatchDuringALongQuery(signal: Int32) async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let endless = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c"
            let run = try DBWatchRun.start([
                "watch", path, "SELECT count(*) FROM player", endless, "--time-limit", "600", "--format", "ndjson",
            ])
            defer { run.kill() }
            _ = try await run.wait(forLines: 1)
            kill(run.pid, signal)
            let snapshot = try await run.waitForExit(timeout: 20)
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            #expect(snapshot.stderr.isEmpty, "\(snapshot)")
        }
    }

    @Test func ctrlCExitsWithZero() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makePlayers(in: scratch)
            let run = try DBWatchRun.start(["watch", path, "SELECT count(*) FROM player"])
            defer { run.kill() }
            _ = try await run.wait(forLines: 1)
            run.interrupt()
            let snapshot = try await run.waitForExit(timeout: 20)
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            #expect(snapshot.stderr.isEmpty, "\(snapshot)")
        }
    }
}
