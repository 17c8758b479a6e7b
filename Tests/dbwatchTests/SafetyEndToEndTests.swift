import DBWatchTestSupport
import Foundation
import Testing

/// User SQL is untrusted: `watch` and `explain` refuse everything but reads,
/// stop runaway queries, and create or change no file, whatever the SQL or
/// the path.
@Suite("Untrusted SQL and bad databases, end to end", RequiredProgram.sqlite3.trait)
struct SafetyEndToEndTests {
    /// A database in rollback-journal mode (no -wal or -shm files appear
    /// when it is read).
    func makeDatabase(in scratch: TemporaryDirectory) throws -> String {
        let path = scratch.file("db.sqlite")
        try Shell.sqlite(
            """
            CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT, score INTEGER);
            INSERT INTO player (name, score) VALUES ('Arthur', 100);
            """, on: path)
        return path
    }

    /// The folder's files with their bytes and modification times.
    func fingerprint(_ scratch: TemporaryDirectory) throws -> [String: String] {
        var result: [String: String] = [:]
        for name in try scratch.listing() {
            let path = scratch.file(name)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let data = FileManager.default.contents(atPath: path) ?? Data()
            result[name] = "\(data.base64EncodedString()) \(String(describing: attributes[.modificationDate]))"
        }
        return result
    }

    /// Statements that read or write outside the database, or write to it,
    /// `{dir}` standing for the scratch folder, and words their refusal must
    /// name.
    static let refusedStatements: [(sql: String, words: String)] = [
        ("ATTACH 'file:{dir}/attached.sqlite?mode=rwc' AS x", "ATTACH"),
        ("VACUUM INTO '{dir}/copy.sqlite'", "VACUUM"),
        ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer"),
        ("SELECT load_extension('{dir}/extension.so')", "load_extension"),
        ("INSERT INTO player (name, score) VALUES ('Mallory', 1)", "writing to player"),
        ("UPDATE player SET score = 0", "writing to player"),
        ("DELETE FROM player", "writing to player"),
        ("REPLACE INTO player (id, name, score) VALUES (1, 'Mallory', 0)", "writing to player"),
        ("PRAGMA user_version = 7", "PRAGMA user_version"),
        ("PRAGMA journal_mode = WAL", "PRAGMA journal_mode"),
        ("PRAGMA main.journal_mode=delete", "PRAGMA journal_mode"),
        ("PRAGMA journal_mode(wal)", "PRAGMA journal_mode"),
        ("PRAGMA writable_schema = ON", "PRAGMA writable_schema"),
        ("BEGIN IMMEDIATE", "transaction control"),
        ("CREATE TABLE t (a)", "refused"),
        ("DROP TABLE player", "refused"),
        ("WITH x AS (SELECT 1) DELETE FROM player", "writing to player"),
    ]

    @Test(arguments: refusedStatements.indices)
    func refusedStatementsChangeNothing(index: Int) async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            let (template, words) = SafetyEndToEndTests.refusedStatements[index]
            let sql = template.replacingOccurrences(of: "{dir}", with: scratch.path)
            let before = try fingerprint(scratch)
            for arguments in [["watch", path, sql, "--once"], ["explain", path, sql]] {
                let snapshot = try await DBWatchRun.run(arguments, directory: scratch.path)
                #expect(snapshot.exitStatus == 67, "\(arguments): \(snapshot)")
                #expect(snapshot.stderr.hasPrefix("dbwatch: refused: "), "\(snapshot)")
                #expect(snapshot.stderr.contains(words), "\(snapshot)")
                #expect(snapshot.stdout.isEmpty)
            }
            #expect(try fingerprint(scratch) == before, "a file appeared or changed")
        }
    }

    /// The read forms of read-only pragmas run and change no file:
    /// `PRAGMA journal_mode` among them, which SQLite does not mark read-only.
    @Test func readOnlyPragmasReadAndChangeNothing() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            let before = try fingerprint(scratch)
            for (sql, output) in [
                ("PRAGMA journal_mode", #""delete""#), ("PRAGMA main.journal_mode", #""delete""#),
                ("PRAGMA user_version", "0"), ("PRAGMA page_count", "2"),
            ] {
                let watch = try await DBWatchRun.run(
                    ["watch", path, sql, "--once", "--format", "ndjson"], directory: scratch.path)
                #expect(watch.exitStatus == 0, "\(sql): \(watch)")
                #expect(
                    watch.lines.count == 1 && watch.lines[0].hasSuffix(#""rows":[["# + output + "]]}"),
                    "\(sql): \(watch)")
                let explain = try await DBWatchRun.run(["explain", path, sql], directory: scratch.path)
                #expect(explain.exitStatus == 0, "\(sql): \(explain)")
            }
            #expect(try fingerprint(scratch) == before, "a file appeared or changed")
        }
    }

    @Test func aRunawayQueryIsStopped() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            let snapshot = try await DBWatchRun.run([
                "watch", path, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
                "--once", "--time-limit", "0.5",
            ])
            #expect(snapshot.exitStatus == 68, "\(snapshot)")
            #expect(
                snapshot.stderr.contains("ran longer than the time limit (0.5 seconds) and was stopped"), "\(snapshot)")
        }
    }

    @Test func aFileURIIsAPlainPathAndCreatesNothing() async throws {
        try await withTemporaryDirectory { scratch in
            let target = scratch.file("target.sqlite")
            for command in ["watch", "explain"] {
                var arguments = [command, "file:\(target)?mode=rwc", "SELECT 1"]
                if command == "watch" { arguments.append("--once") }
                let snapshot = try await DBWatchRun.run(arguments, directory: scratch.path)
                #expect(snapshot.exitStatus == 66, "\(snapshot)")
                #expect(snapshot.stderr.contains("no such database file: file:\(target)?mode=rwc"), "\(snapshot)")
            }
            #expect(try scratch.listing().isEmpty, "neither target.sqlite nor a file: folder may appear")
        }
    }

    @Test func aMissingDatabaseIsAnErrorThatCreatesNothing() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("missing.sqlite")
            let watch = try await DBWatchRun.run(["watch", path, "SELECT 1", "--once"])
            #expect(watch.exitStatus == 66, "\(watch)")
            #expect(watch.stderr == "dbwatch: no such database file: \(path) (nothing was created)\n")
            let explain = try await DBWatchRun.run(["explain", path, "SELECT 1"])
            #expect(explain.exitStatus == 66, "\(explain)")
            let directory = try await DBWatchRun.run(["watch", scratch.path, "SELECT 1", "--once"])
            #expect(directory.exitStatus == 66, "\(directory)")
            #expect(directory.stderr.contains("is a directory"))
            #expect(try scratch.listing().isEmpty)
        }
    }

    /// Every command says the same of a directory given as the database.
    @Test func aDirectoryIsNotADatabaseFileForEveryCommand() async throws {
        try await withTemporaryDirectory { scratch in
            let folder = scratch.file("folder.sqlite")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for arguments in [
                ["watch", folder, "SELECT 1", "--once"], ["explain", folder, "SELECT 1"],
                ["migrate", folder, "--dir", Repository.migrations.path],
                ["migrate", folder, "--dir", Repository.migrations.path, "--status"],
                ["demo", "--db", folder, "--duration", "1"],
            ] {
                let snapshot = try await DBWatchRun.run(arguments)
                #expect(snapshot.exitStatus == 66, "\(arguments): \(snapshot)")
                #expect(snapshot.stderr == "dbwatch: \(folder) is a directory, not a database file\n", "\(snapshot)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
        }
    }

    /// A FIFO given as the database is an error at once, for every command:
    /// nothing waits forever for a writer that never comes.
    @Test func aFIFOIsNotADatabaseAndNothingWaitsForAWriter() async throws {
        try await withTemporaryDirectory { scratch in
            let fifo = scratch.file("fifo.sqlite")
            #expect(mkfifo(fifo, 0o644) == 0)
            for arguments in [
                ["watch", fifo, "SELECT 1", "--once"], ["watch", fifo, "SELECT 1", "--count", "1"],
                ["explain", fifo, "SELECT 1"], ["migrate", fifo, "--dir", Repository.migrations.path],
                ["migrate", fifo, "--dir", Repository.migrations.path, "--status"],
                ["demo", "--db", fifo, "--duration", "1"],
            ] {
                let snapshot = try await DBWatchRun.run(arguments, timeout: 20)
                #expect(snapshot.exitStatus == 66, "\(arguments): \(snapshot)")
                #expect(snapshot.stderr.hasPrefix("dbwatch: cannot read the database"), "\(snapshot)")
            }
            #expect(try scratch.listing() == ["fifo.sqlite"])
        }
    }

    /// Table, column and index names come from the database, and a view
    /// hides them from the SQL typed: `explain` shows them escaped.
    @Test func explainEscapesControlCharactersInSchemaNames() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("names.sqlite")
            try Shell.sqlite(
                """
                CREATE TABLE "x\u{1B}[2Jevil" ("c\u{1B}[31m" INTEGER);
                CREATE INDEX "i\u{1B}]0;title\u{7}" ON "x\u{1B}[2Jevil" ("c\u{1B}[31m");
                CREATE VIEW v AS SELECT * FROM "x\u{1B}[2Jevil" WHERE "c\u{1B}[31m" > 1;
                """, on: path)
            let snapshot = try await DBWatchRun.run(["explain", path, "SELECT * FROM v"])
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
            #expect(!snapshot.stdout.contains("\u{1B}") && !snapshot.stdout.contains("\u{7}"), "\(snapshot)")
            #expect(snapshot.stdout.contains("Observes main.x\\x1b[2jevil: columns c\\x1b[31m."), "\(snapshot)")
            #expect(snapshot.stdout.contains("rows of main.x\\x1b[2jevil, or updates its column c\\x1b[31m"))
        }
    }

    /// Swift replaces bytes that are not UTF-8 with U+FFFD in the command
    /// line: a Latin-1 path named another file, which `migrate` created and
    /// migrated, reporting success, while `watch` called the real file
    /// missing. Such an argument is a usage error, and nothing is created.
    @Test func anArgumentThatIsNotUTF8IsAUsageErrorThatCreatesNothing() async throws {
        try await withTemporaryDirectory { scratch in
            _ = try makeDatabase(in: scratch)
            // The arguments are passed by a shell: a Swift String cannot hold the byte \351.
            let script = """
                cd "$1" || exit 99
                cp db.sqlite "$(printf 'lat\\351.sqlite')"
                timeout 60 "$0" migrate "$(printf 'lat\\351.sqlite')" --dir "$2" 2>&1; echo "exit $?"
                timeout 60 "$0" watch "$(printf 'lat\\351.sqlite')" "SELECT 1" --once 2>&1; echo "exit $?"
                timeout 60 "$0" watch db.sqlite "SELECT ?" --arg "$(printf '\\377')" --once 2>&1; echo "exit $?"
                ls | wc -l
                """
            let output = try await Shell.runOnOwnThread(
                "/bin/sh", ["-c", script, DBWatchBinary.path, scratch.path, Repository.migrations.path])
            #expect(
                output == """
                    dbwatch: argument 2 is not valid UTF-8: lat\u{FFFD}.sqlite \
                    (paths, SQL and --arg values must be UTF-8 text)
                    exit 64
                    dbwatch: argument 2 is not valid UTF-8: lat\u{FFFD}.sqlite \
                    (paths, SQL and --arg values must be UTF-8 text)
                    exit 64
                    dbwatch: argument 5 is not valid UTF-8: \u{FFFD} (paths, SQL and --arg values must be UTF-8 text)
                    exit 64
                    2

                    """)
        }
    }

    @Test func randomBytesAndTextAreNotADatabase() async throws {
        try await withTemporaryDirectory { scratch in
            var generator = SystemRandomNumberGenerator()
            let random = Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &generator) })
            _ = FileManager.default.createFile(atPath: scratch.file("random.sqlite"), contents: random)
            _ = FileManager.default.createFile(
                atPath: scratch.file("notes.txt"), contents: Data("Not a database, just words.\n".utf8))
            let before = try fingerprint(scratch)
            for name in ["random.sqlite", "notes.txt"] {
                for arguments in [
                    ["watch", scratch.file(name), "SELECT 1", "--once"], ["explain", scratch.file(name), "SELECT 1"],
                ] {
                    let snapshot = try await DBWatchRun.run(arguments)
                    #expect(snapshot.exitStatus == 66, "\(snapshot)")
                    #expect(snapshot.stderr.contains("file is not a database"), "\(snapshot)")
                }
            }
            #expect(try fingerprint(scratch) == before)
        }
    }

    @Test func corruptPagesAreAClearError() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("corrupt.sqlite")
            try Shell.sqlite(
                """
                CREATE TABLE t (a, b);
                WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000)
                INSERT INTO t SELECT x, hex(randomblob(50)) FROM c;
                """, on: path)
            let handle = try #require(FileHandle(forUpdatingAtPath: path))
            try handle.seek(toOffset: 8192)
            var generator = SystemRandomNumberGenerator()
            try handle.write(
                contentsOf: Data((0..<(16 * 4096)).map { _ in UInt8.random(in: 0...255, using: &generator) }))
            try handle.close()
            let snapshot = try await DBWatchRun.run(["watch", path, "SELECT count(*), max(b) FROM t", "--once"])
            #expect(snapshot.exitStatus == 66, "\(snapshot)")
            #expect(snapshot.stderr.contains("malformed"), "\(snapshot)")
        }
    }

    /// SQL that starts with a `--` comment reads as an option: the usage
    /// error says to put `--` before it, and with `--` it runs.
    @Test func sqlStartingWithACommentNeedsTheTerminator() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            let sql = "-- the best\nSELECT max(score) FROM player"
            for arguments in [["watch", path, sql, "--once"], ["explain", path, sql]] {
                let snapshot = try await DBWatchRun.run(arguments)
                #expect(snapshot.exitStatus == 64, "\(snapshot)")
                #expect(snapshot.stderr.contains("put -- before the SQL"), "\(snapshot)")
            }
            let fixed = try await DBWatchRun.run(["watch", path, "--once", "--format", "csv", "--", sql])
            #expect(fixed.exitStatus == 0, "\(fixed)")
            #expect(fixed.stdout.contains("100"), "\(fixed)")
        }
    }

    /// One function call that would make a gigabyte fails at once instead
    /// of filling memory and the terminal (the time limit cannot stop it).
    @Test func aHugeValueFailsAtOnce() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            let huge = try await DBWatchRun.run(["watch", path, "SELECT zeroblob(1000000000)", "--once"])
            #expect(huge.exitStatus == 65, "\(huge)")
            #expect(huge.stderr.contains("too big"), "\(huge)")
            #expect(huge.stdout.isEmpty, "\(huge)")
        }
    }

    /// An endless query whose every step is as costly as the bounds allow.
    static let costlyEndlessQuery = """
        WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
        SELECT count(*) FROM c WHERE length(randomblob(999999)) + instr(printf('%.*c', 999999, 'a'), 'aaab') > 0
        """

    /// One call of `instr` on megabytes would run for tens of seconds past a
    /// 1 s time limit (no progress callback fires inside it): it is refused
    /// at once.
    @Test func aCostlyFunctionCallFailsAtOnce() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            // Refused before the call runs: it printed [[0]] and exited 0.
            let snapshot = try await DBWatchRun.run(
                [
                    "watch", path, "--once", "--time-limit", "1", "--",
                    "SELECT instr(printf('%.*c', 2000000, 'a'), printf('%.*c', 1000000, 'a') || 'b')",
                ], timeout: 120)
            #expect(snapshot.exitStatus == 65, "\(snapshot)")
            #expect(snapshot.stderr.contains("too big"), "\(snapshot)")
        }
    }

    /// SIGTERM, SIGINT and SIGHUP end `watch` with 0 within moments while a
    /// query of costly steps runs under a long time limit (600 s): by
    /// interrupting it, or on a slow machine (the thread sanitizer) by the
    /// exit after the grace period. The bound is loose for such machines,
    /// and far below the time limit the process waited for before.
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func signalsEndWatchPromptlyDuringACostlyQuery(signal: Int32) async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            let run = try DBWatchRun.start([
                "watch", path, "--format", "ndjson", "--time-limit", "600", "SELECT 1", Self.costlyEndlessQuery,
            ])
            defer { run.kill() }
            // The first query's value: the signals are handled, the second query runs.
            _ = try await run.wait(forLines: 1)
            let sent = ContinuousClock.now
            run.send(signal)
            let snapshot = try await run.waitForExit(timeout: 120)
            #expect(ContinuousClock.now - sent < .seconds(30), "\(snapshot)")
            #expect(snapshot.exitStatus == 0, "\(snapshot)")
        }
    }

    /// The same for `explain`, which exits 130.
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func signalsEndExplainPromptlyDuringACostlyQuery(signal: Int32) async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            let run = try DBWatchRun.start(["explain", path, "--time-limit", "600", Self.costlyEndlessQuery])
            defer { run.kill() }
            // The pool's reader exists once the signals are handled and the database is open.
            let deadline = ContinuousClock.now + .seconds(30)
            while !run.hasThread(named: "dbwatch.read.0") && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let sent = ContinuousClock.now
            run.send(signal)
            let snapshot = try await run.waitForExit(timeout: 120)
            #expect(ContinuousClock.now - sent < .seconds(30), "\(snapshot)")
            #expect(snapshot.exitStatus == 130, "\(snapshot)")
        }
    }

    /// `SELECT x, zeroblob(99000000) FROM (10 rows)` took 83 s and 4.5 GB:
    /// now the first value is refused, and a result beyond
    /// `--max-result-size` fails with its own message, in `watch` and `explain`.
    @Test func aLargeResultFailsAtOnce() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            let tenRows = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10) "
            let huge = try await DBWatchRun.run(
                ["watch", path, "--once", "--format", "ndjson", tenRows + "SELECT x, zeroblob(99000000) FROM c"],
                timeout: 120)
            #expect(huge.exitStatus == 65, "\(huge)")
            #expect(huge.stdout.isEmpty, "\(huge)")
            for command in ["watch", "explain"] {
                let arguments = [
                    command, path, "--max-result-size", "1000", tenRows + "SELECT x, zeroblob(300) FROM c",
                ]
                let snapshot = try await DBWatchRun.run(arguments + (command == "watch" ? ["--once"] : []))
                #expect(snapshot.exitStatus == 65, "\(snapshot)")
                #expect(snapshot.stderr.contains("the result is larger than the limit of 1000 bytes"), "\(snapshot)")
                let fits = try await DBWatchRun.run(
                    [command, path, "--max-result-size", "1000", tenRows + "SELECT x, zeroblob(10) FROM c"]
                        + (command == "watch" ? ["--once"] : []))
                #expect(fits.exitStatus == 0, "\(fits)")
            }
            let zero = try await DBWatchRun.run(["watch", path, "--max-result-size", "0", "SELECT 1"])
            #expect(zero.exitStatus == 64, "\(zero)")
        }
    }

    /// A large `ORDER BY` wrote 1.6 GB of temporary files within the
    /// default time limit: now its files stop at `--max-temp-size`, with
    /// its own message and exit 65, in `watch` and `explain`.
    @Test func largeTemporaryFilesFailAtTheirLimit() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            // About 10 MB to sort: SQLite's sorter spills beyond its 2 MB page cache.
            let largeSort = """
                WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
                SELECT count(*) FROM (SELECT x FROM c ORDER BY randomblob(500) LIMIT -1 OFFSET 1)
                """
            for command in ["watch", "explain"] {
                let once = command == "watch" ? ["--once"] : []
                let refused = try await DBWatchRun.run(
                    [command, path, "--max-temp-size", "2000000", "--time-limit", "60"] + once + ["--", largeSort],
                    timeout: 120)
                #expect(refused.exitStatus == 65, "\(refused)")
                #expect(
                    refused.stderr.contains("temporary files are larger than the limit of 2000000 bytes"),
                    "\(refused)")
                // The default limit (256 MB) lets it run.
                let fits = try await DBWatchRun.run(
                    [command, path, "--time-limit", "60"] + once + ["--", largeSort], timeout: 120)
                #expect(fits.exitStatus == 0, "\(fits)")
            }
            let negative = try await DBWatchRun.run(["watch", path, "--max-temp-size", "-1", "SELECT 1"])
            #expect(negative.exitStatus == 64, "\(negative)")
        }
    }

    @Test func badSQLShowsSQLitesMessageAndPosition() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try makeDatabase(in: scratch)
            let syntax = try await DBWatchRun.run(["watch", path, "SELECT * FORM player", "--once"])
            #expect(syntax.exitStatus == 65, "\(syntax)")
            #expect(
                syntax.stderr == """
                    dbwatch: near "FORM": syntax error (SQLite error 1: SQL logic error)
                        SELECT * FORM player
                                 ^

                    """)
            let table = try await DBWatchRun.run(["explain", path, "SELECT * FROM nope"])
            #expect(table.exitStatus == 65, "\(table)")
            #expect(table.stderr.contains("no such table: nope"))
            let arguments = try await DBWatchRun.run(["watch", path, "SELECT * FROM player WHERE id = ?", "--once"])
            #expect(arguments.exitStatus == 65, "\(arguments)")
            #expect(arguments.stderr.contains("wrong number of arguments"))
            let two = try await DBWatchRun.run(["watch", path, "SELECT 1; SELECT 2", "--once"])
            #expect(two.exitStatus == 65, "\(two)")
            #expect(two.stderr.contains("one statement"))
            let usage = try await DBWatchRun.run(["watch", path, "SELECT 1", "--count", "0"])
            #expect(usage.exitStatus == 64, "\(usage)")
        }
    }
}
