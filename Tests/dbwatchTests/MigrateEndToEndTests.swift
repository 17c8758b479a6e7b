import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

/// `dbwatch migrate` on the repository's own `Migrations/`, and on broken
/// migration folders.
@Suite("dbwatch migrate and explain, end to end")
struct MigrateEndToEndTests {
    let migrations = Repository.migrations.path
    let names = [
        "0001_create_team_and_player.sql", "0002_add_score_history.sql", "0003_create_game.sql",
        "0004_add_player_search.sql",
    ]

    @Test func twoProcessesMigratingAtOnceApplyEachMigrationOnce() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            // Both start before either finishes: they serialize on SQLite's
            // write lock, and each re-reads the records inside its transaction.
            let first = try DBWatchRun.start(["migrate", path, "--dir", migrations])
            let second = try DBWatchRun.start(["migrate", path, "--dir", migrations])
            let results = [try await first.waitForExit(), try await second.waitForExit()]
            for result in results { #expect(result.exitStatus == 0, "\(result)") }
            let applied = results.map { $0.lines.filter { $0.contains(" … applied (") }.count }
            #expect(applied.reduce(0, +) == 4, "\(results)")
            let status = try await DBWatchRun.run(["migrate", path, "--dir", migrations, "--status"])
            #expect(status.stdout.contains("4 of 4 migrations applied"), "\(status)")
        }
    }

    @Test func migratesTheRepositoryMigrationsStepByStep() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            let status = try await DBWatchRun.run(["migrate", path, "--dir", migrations, "--status"])
            #expect(status.exitStatus == 0, "\(status)")
            #expect(status.stdout.contains("0 of 4 migrations applied"))
            #expect(names.allSatisfy { status.stdout.contains("pending   \($0)") }, "\(status)")
            let dryRun = try await DBWatchRun.run(["migrate", path, "--dir", migrations, "--dry-run", "--to", "2"])
            #expect(dryRun.exitStatus == 0, "\(dryRun)")
            #expect(dryRun.lines.filter { $0.hasPrefix("  0") } == ["  " + names[0], "  " + names[1]])
            #expect(try scratch.listing().isEmpty, "--status and --dry-run create nothing")

            let first = try await DBWatchRun.run(["migrate", path, "--dir", migrations, "--to", "2"])
            #expect(first.exitStatus == 0, "\(first)")
            #expect(first.lines.filter { $0.contains(" … applied (") }.count == 2, "\(first)")
            #expect(first.stdout.contains("is at 0002_add_score_history.sql (2 of 4 applied, 2 pending)"))

            let rest = try await DBWatchRun.run(["migrate", path, "--dir", migrations])
            #expect(rest.exitStatus == 0, "\(rest)")
            #expect(rest.lines.first == "Applying 2 migrations from \(migrations) to \(path):")
            #expect(
                rest.lines.dropFirst().prefix(2).map { $0.components(separatedBy: " … ").first } == [
                    "  " + names[2], "  " + names[3],
                ])
            #expect(rest.lines.last == "Applied 2 migrations; \(path) is at \(names[3]) (4 of 4 applied, up to date).")

            let again = try await DBWatchRun.run(["migrate", path, "--dir", migrations])
            #expect(again.exitStatus == 0, "\(again)")
            #expect(again.stdout.hasPrefix("Nothing to apply"))
            let done = try await DBWatchRun.run(["migrate", path, "--dir", migrations, "--status"])
            #expect(done.stdout.contains("4 of 4 migrations applied"))
            #expect(names.allSatisfy { done.stdout.contains("applied   \($0)") }, "\(done)")

            // The schema is there: explain a query on it.
            let explain = try await DBWatchRun.run([
                "explain", path, "SELECT name, score FROM player WHERE score > ? ORDER BY score DESC", "--arg", "10",
            ])
            #expect(explain.exitStatus == 0, "\(explain)")
            #expect(explain.stdout.contains("Observes main.player: columns name, score."), "\(explain)")
            #expect(
                explain.stdout.contains("inserts or deletes rows of main.player, or updates its columns name, score"))
            #expect(
                explain.stdout.contains("Query plan:\n  └─ SEARCH player USING INDEX player_on_score"), "\(explain)")
            let count = try await DBWatchRun.run(["explain", path, "SELECT count(*) FROM player", "--no-plan"])
            #expect(count.stdout.contains("Observes main.player: which rows exist (inserts and deletes), no column."))
            #expect(!count.stdout.contains("Query plan"))

            // A query that is an EXPLAIN statement has no plan to show, and is no error.
            for sql in ["EXPLAIN SELECT name FROM player", "explain query plan SELECT name FROM player"] {
                let explained = try await DBWatchRun.run(["explain", path, sql])
                #expect(explained.exitStatus == 0, "\(explained)")
                #expect(explained.stdout.contains("Observes main.player: columns name."), "\(explained)")
                #expect(explained.stdout.contains("Query plan: none shown, the query is an EXPLAIN statement itself."))
            }
        }
    }

    @Test func aFailingMigrationIsRolledBackAndReported() async throws {
        try await withTemporaryDirectory { scratch in
            let folder = scratch.file("migrations")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: migrations + "/" + names[0], toPath: folder + "/" + names[0])
            try Data("CREATE TABLE trophy (id INTEGER PRIMARY KEY);\nINSERT INTO nope VALUES (1);\n".utf8)
                .write(to: URL(fileURLWithPath: folder + "/0002_add_trophy.sql"))
            let path = scratch.file("app.sqlite")
            let snapshot = try await DBWatchRun.run(["migrate", path, "--dir", folder])
            #expect(snapshot.exitStatus == 65, "\(snapshot)")
            #expect(snapshot.stdout.contains("0002_add_trophy.sql … failed, rolled back"))
            #expect(snapshot.stdout.contains("Applied 1 of 2 before the failure"))
            #expect(snapshot.stderr.contains("migration 0002_add_trophy.sql failed at line 2"), "\(snapshot)")
            #expect(snapshot.stderr.contains("no such table: nope"))

            // Editing an applied migration stops everything.
            let handle = try #require(FileHandle(forWritingAtPath: folder + "/" + names[0]))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("-- edited\n".utf8))
            try handle.close()
            let status = try await DBWatchRun.run(["migrate", path, "--dir", folder, "--status"])
            #expect(status.exitStatus == 65, "\(status)")
            #expect(status.stdout.contains("CHANGED   \(names[0])"))
        }
    }

    /// A migration that drops a view is applied for real: the schema and
    /// the history agree, and a view can be redefined in one migration.
    @Test func dropsTakeEffect() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            let folder = try writeMigrations(
                [
                    "0001_create.sql": """
                    CREATE TABLE t (a); CREATE VIEW v AS SELECT a FROM t; CREATE VIEW w AS SELECT a FROM t;
                    CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END; CREATE INDEX i ON t (a);
                    CREATE VIRTUAL TABLE f USING fts5 (body);
                    """,
                    "0002_drop_view.sql": "DROP VIEW v;\n",
                    "0003_redefine_view.sql": "DROP VIEW w;\nCREATE VIEW w AS SELECT a * 2 AS a FROM t;\n",
                    "0004_drop_the_rest.sql": """
                    DROP TRIGGER IF EXISTS tr; DROP INDEX IF EXISTS i; DROP TABLE IF EXISTS f;
                    DROP VIEW IF EXISTS v;
                    """,
                ], in: scratch)
            let run = try await DBWatchRun.run(["migrate", path, "--dir", folder])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.lines.filter { $0.contains(" … applied (") }.count == 4, "\(run)")
            let queue = try DatabaseQueue(path: path)
            defer { queue.syncClose() }
            let schema = try await queue.read { db in
                try db.fetchAll(
                    String.self,
                    sql:
                        "SELECT type || ' ' || name || ': ' || sql FROM sqlite_master WHERE name <> 'dbwatch_migrations' "
                        + "AND name NOT LIKE 'sqlite_%' ORDER BY name")
            }
            #expect(schema == ["table t: CREATE TABLE t (a)", "view w: CREATE VIEW w AS SELECT a * 2 AS a FROM t"])
        }
    }

    /// A migration that fails because it made its own connection read-only
    /// (`PRAGMA query_only`) is a bad migration (65), not an unreadable
    /// database (66); the database itself stays writable.
    @Test func aMigrationFailingWithReadOnlyIsABadMigration() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            let folder = try writeMigrations(
                [
                    "0001_create.sql": "CREATE TABLE t (a);\n",
                    "0002_query_only.sql": "PRAGMA query_only = 1;\nINSERT INTO t VALUES (1);\n",
                ], in: scratch)
            let run = try await DBWatchRun.run(["migrate", path, "--dir", folder])
            #expect(run.exitStatus == 65, "\(run)")
            #expect(run.stdout.contains("0002_query_only.sql … failed, rolled back"), "\(run)")
            #expect(run.stderr.contains("migration 0002_query_only.sql failed at line 2"), "\(run)")
            #expect(run.stderr.contains("readonly"), "\(run)")
        }
    }

    /// Writes `files` into a new `migrations` folder of `scratch`; returns its path.
    private func writeMigrations(_ files: [String: String], in scratch: TemporaryDirectory) throws -> String {
        let folder = scratch.file("migrations")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (name, contents) in files {
            try Data(contents.utf8).write(to: URL(fileURLWithPath: folder + "/" + name))
        }
        return folder
    }

    /// A file that cannot grow (here its size limit, as on a full disk) fails
    /// the migration that needs room: exit 74, the ones before it stay, the
    /// file stays sound, and migrating again with room finishes the job.
    @Test(
        .disabled(
            if: isThreadSanitized,
            "the thread sanitizer's runtime crashes with SIGBUS in its own memory under a file size limit")
    )
    func aWriteFailureKeepsEarlierMigrationsAndTheFileSound() async throws {
        try await withTemporaryDirectory { scratch in
            // The size of the file holding the first two migrations.
            let reference = scratch.file("reference.sqlite")
            let two = try await DBWatchRun.run(["migrate", reference, "--dir", migrations, "--to", "2"])
            #expect(two.exitStatus == 0, "\(two)")
            let sizeAfterTwo = try #require(
                try FileManager.default.attributesOfItem(atPath: reference)[.size] as? Int)

            // The same migrations with the file unable to grow past that size.
            let path = scratch.file("app.sqlite")
            let limited = try await DBWatchRun.run(["migrate", path, "--dir", migrations], fileSizeLimit: sizeAfterTwo)
            #expect(limited.exitStatus == 74, "\(limited)")
            #expect(limited.stdout.contains("\(names[2]) … failed, rolled back"), "\(limited)")
            #expect(limited.stdout.contains("Applied 2 of 4 before the failure"), "\(limited)")
            #expect(limited.stderr.contains("cannot write the database"), "\(limited)")
            #expect(limited.stderr.contains("the failed transaction was rolled back"), "\(limited)")

            let queue = try DatabaseQueue(path: path)
            let (integrity, tables) = try await queue.read { db in
                (
                    try db.fetchOne(String.self, sql: "PRAGMA integrity_check"),
                    try db.fetchAll(String.self, sql: "SELECT name FROM sqlite_schema WHERE type = 'table'")
                )
            }
            await queue.close()
            #expect(integrity == "ok")
            #expect(tables.contains("player") && !tables.contains("game"), "\(tables)")

            let rest = try await DBWatchRun.run(["migrate", path, "--dir", migrations])
            #expect(rest.exitStatus == 0, "\(rest)")
            #expect(rest.stdout.contains("Applied 2 migrations"), "\(rest)")
        }
    }

    /// Ctrl-C during a migration that runs forever interrupts its statement:
    /// the migration rolls back, the progress line ends, the ones before it
    /// stay, and the command exits 130.
    @Test func ctrlCRollsBackTheMigrationInProgress() async throws {
        try await withTemporaryDirectory { scratch in
            let folder = scratch.file("migrations")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data("CREATE TABLE first (id INTEGER PRIMARY KEY);\n".utf8)
                .write(to: URL(fileURLWithPath: folder + "/0001_first.sql"))
            try Data(
                """
                CREATE TABLE slow (n INTEGER);
                INSERT INTO slow WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c;

                """.utf8
            ).write(to: URL(fileURLWithPath: folder + "/0002_slow.sql"))
            let path = scratch.file("app.sqlite")
            let run = try DBWatchRun.start(["migrate", path, "--dir", folder])
            defer { run.kill() }
            _ = try await run.wait(forOutput: "0002_slow.sql … ")
            run.interrupt()
            let snapshot = try await run.waitForExit(timeout: 20)
            #expect(snapshot.exitStatus == 130, "\(snapshot)")
            #expect(snapshot.stdout.contains("  0002_slow.sql … interrupted, rolled back\n"), "\(snapshot)")
            #expect(snapshot.stdout.contains("Applied 1 of 2 before the interruption"), "\(snapshot)")
            #expect(
                snapshot.stderr == "dbwatch: interrupted; the migration in progress was rolled back\n", "\(snapshot)")

            let queue = try DatabaseQueue(path: path)
            let (tables, numbers) = try await queue.read { db in
                (
                    try db.fetchAll(String.self, sql: "SELECT name FROM sqlite_schema WHERE type = 'table'"),
                    try db.fetchAll(Int.self, sql: "SELECT number FROM dbwatch_migrations")
                )
            }
            await queue.close()
            #expect(tables.contains("first") && !tables.contains("slow"), "\(tables)")
            #expect(numbers == [1])
        }
    }

    /// A signal during one costly function call, which `sqlite3_interrupt`
    /// cannot stop (an `instr` of megabytes, about a minute and a half here),
    /// ends `migrate` after the grace period with 130; the migration in
    /// progress, not committed, is rolled back by the next connection.
    @Test func aSignalEndsAMigrationStuckInOneCall() async throws {
        try await withTemporaryDirectory { scratch in
            let folder = scratch.file("migrations")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data("CREATE TABLE first (id INTEGER PRIMARY KEY);\n".utf8)
                .write(to: URL(fileURLWithPath: folder + "/0001_first.sql"))
            try Data(
                """
                CREATE TABLE slow AS SELECT instr(printf('%.*c', 3000000, 'a'), printf('%.*c', 1500000, 'a') || 'b') AS n;

                """.utf8
            ).write(to: URL(fileURLWithPath: folder + "/0002_slow.sql"))
            let path = scratch.file("app.sqlite")
            let run = try DBWatchRun.start(["migrate", path, "--dir", folder])
            defer { run.kill() }
            _ = try await run.wait(forOutput: "0002_slow.sql … ")
            // A second of processor time: the call runs (it takes far longer).
            let deadline = ContinuousClock.now + .seconds(60)
            while run.cpuSeconds < 1 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let sent = ContinuousClock.now
            run.send(SIGTERM)
            let snapshot = try await run.waitForExit(timeout: 120)
            #expect(ContinuousClock.now - sent < .seconds(30), "\(snapshot)")
            #expect(snapshot.exitStatus == 130, "\(snapshot)")
            #expect(snapshot.stderr.contains("the migration in progress did not stop"), "\(snapshot)")

            let queue = try DatabaseQueue(path: path)
            let (tables, numbers) = try await queue.read { db in
                (
                    try db.fetchAll(String.self, sql: "SELECT name FROM sqlite_schema WHERE type = 'table'"),
                    try db.fetchAll(Int.self, sql: "SELECT number FROM dbwatch_migrations")
                )
            }
            await queue.close()
            #expect(tables.contains("first") && !tables.contains("slow"), "\(tables)")
            #expect(numbers == [1])
        }
    }

    /// A database another connection keeps locked past the busy timeout is
    /// a temporary failure (exit 75) with a hint, and the summary tells the
    /// migrations applied, without calling a database that holds tables empty.
    @Test func aLockedDatabaseIsATemporaryFailure() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            let snapshot = try await withDatabaseLocked(path, by: "BEGIN IMMEDIATE") {
                try await DBWatchRun.run(["migrate", path, "--dir", migrations])
            }
            #expect(snapshot.exitStatus == 75, "\(snapshot)")
            #expect(snapshot.stderr.contains("database is locked"), "\(snapshot)")
            #expect(snapshot.stderr.contains("another connection holds its lock; try again"), "\(snapshot)")
            #expect(
                snapshot.stdout.contains("Applied 0 of 4 before the failure; \(path) is at no migration yet (0 of 4"),
                "\(snapshot)")
            #expect(!snapshot.stdout.contains("empty"), "\(snapshot)")
        }
    }

    /// `watch` and `explain` on a database held with `BEGIN EXCLUSIVE`.
    @Test(arguments: ["watch", "explain"])
    func anExclusivelyLockedDatabaseIsATemporaryFailure(command: String) async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            let snapshot = try await withDatabaseLocked(path, by: "BEGIN EXCLUSIVE") {
                try await DBWatchRun.run(
                    [command, path, "SELECT count(*) FROM existing"] + (command == "watch" ? ["--once"] : []))
            }
            #expect(snapshot.exitStatus == 75, "\(snapshot)")
            #expect(snapshot.stderr.contains("another connection holds its lock; try again"), "\(snapshot)")
        }
    }

    /// Ctrl-C while the command waits for another connection's lock (5 s
    /// by default, when opening and again when reading) stops it: the wait
    /// is cancelled (the library's lock-wait tests show it ends at once).
    @Test(arguments: ["watch", "explain", "migrate"])
    func aSignalStopsTheWaitForALock(command: String) async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            let snapshot = try await withDatabaseLocked(path, by: "BEGIN EXCLUSIVE") {
                let arguments =
                    command == "migrate"
                    ? ["migrate", path, "--dir", migrations] : [command, path, "SELECT count(*) FROM existing"]
                let run = try DBWatchRun.start(arguments)
                defer { run.kill() }
                // Sent as the notice is read: a loaded machine resuming this test late must not let the busy timeout end the wait first.
                try await run.interrupt(whenError: "waiting for another connection's lock")
                return try await run.waitForExit(timeout: 20)
            }
            #expect(snapshot.exitStatus == 130, "\(snapshot)")
            #expect(snapshot.stderr.contains("(Ctrl-C to stop)\n"), "\(snapshot)")
            #expect(snapshot.stderr.contains("interrupted"), "\(snapshot)")
        }
    }

    /// A migration that is not UTF-8 is a bad migration (exit 65), like a
    /// bad name or a gap, not an unreadable one.
    @Test func aNonUTF8MigrationIsABadMigration() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            let folder = scratch.file("migrations")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data([0x53, 0x45, 0x4C, 0xFF, 0xFE, 0x3B]).write(to: URL(fileURLWithPath: folder + "/0001_bytes.sql"))
            let bytes = try await DBWatchRun.run(["migrate", path, "--dir", folder])
            #expect(bytes.exitStatus == 65, "\(bytes)")
            #expect(
                bytes.stderr == "dbwatch: the migration file \(folder)/0001_bytes.sql is not valid UTF-8 text\n",
                "\(bytes)")
        }
    }

    /// An unreadable migration file or folder names its path and the
    /// system's reason (exit 66). Permissions mean nothing to root, who
    /// reads everything.
    @Test(.enabled(if: getuid() != 0, "root reads files whatever their permissions"))
    func unreadableMigrationsSayPermissionDenied() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            let folder = scratch.file("migrations")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let file = folder + "/0001_a.sql"
            try Data("CREATE TABLE a (x);\n".utf8).write(to: URL(fileURLWithPath: file))
            try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: file)
            let unreadableFile = try await DBWatchRun.run(["migrate", path, "--dir", folder])
            #expect(unreadableFile.exitStatus == 66, "\(unreadableFile)")
            #expect(
                unreadableFile.stderr == "dbwatch: cannot read migrations at \(file): Permission denied\n",
                "\(unreadableFile)")
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: folder)
            defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder) }
            let unreadableFolder = try await DBWatchRun.run(["migrate", path, "--dir", folder])
            #expect(unreadableFolder.exitStatus == 66, "\(unreadableFolder)")
            #expect(
                unreadableFolder.stderr == "dbwatch: cannot read migrations at \(folder): Permission denied\n",
                "\(unreadableFolder)")
        }
    }

    /// Names and records that hold control characters (a file name, the
    /// history table of a database someone else wrote, SQL) are printed
    /// escaped: they cannot move the cursor, retitle or recolour the terminal.
    @Test func controlCharactersInNamesAndRecordsAreShownEscaped() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            let folder = scratch.file("migrations")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: migrations + "/" + names[0], toPath: folder + "/" + names[0])
            try Data().write(to: URL(fileURLWithPath: folder + "/0002_\u{1B}[31mred\u{7}.sql"))
            let badName = try await DBWatchRun.run(["migrate", path, "--dir", folder])
            #expect(badName.exitStatus == 65, "\(badName)")
            #expect(badName.stderr.contains("`0002_\\x1b[31mred\\x07.sql`"), "\(badName)")
            try FileManager.default.removeItem(atPath: folder + "/0002_\u{1B}[31mred\u{7}.sql")
            let applied = try await DBWatchRun.run(["migrate", path, "--dir", folder])
            #expect(applied.exitStatus == 0, "\(applied)")
            try Shell.sqlite(
                """
                UPDATE dbwatch_migrations SET applied_at = char(27) || ']0;title' || char(7);
                INSERT INTO dbwatch_migrations VALUES (2, 'x' || char(27) || '[2J', 'ab', char(27) || '[31m');
                """, on: path)
            let status = try await DBWatchRun.run(["migrate", path, "--dir", folder, "--status"])
            #expect(status.exitStatus == 65, "\(status)")
            let sql = try await DBWatchRun.run(["watch", path, "SELECT * FROM \u{1B}[31mred", "--once"])
            #expect(sql.exitStatus == 65, "\(sql)")
            for run in [badName, status, sql] {
                #expect(!(run.stdout + run.stderr).contains("\u{1B}"), "\(run)")
                #expect(!(run.stdout + run.stderr).contains("\u{7}"), "\(run)")
            }
            #expect(status.stdout.contains("\\x1b]0;title\\x07"), "\(status)")
            #expect(status.stderr.contains("0002_x\\x1b[2J.sql"), "\(status)")
        }
    }

    @Test func badDirectoriesAndTargets() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("app.sqlite")
            let missing = try await DBWatchRun.run(["migrate", path, "--dir", scratch.file("nowhere")])
            #expect(missing.exitStatus == 66, "\(missing)")
            #expect(missing.stderr.contains("no such directory"))
            let target = try await DBWatchRun.run(["migrate", path, "--dir", migrations, "--to", "99"])
            #expect(target.exitStatus == 64, "\(target)")
            #expect(target.stderr.contains("there is no migration 0099"))
            let folder = scratch.file("gap")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: migrations + "/" + names[0], toPath: folder + "/" + names[0])
            try FileManager.default.copyItem(atPath: migrations + "/" + names[2], toPath: folder + "/" + names[2])
            let gap = try await DBWatchRun.run(["migrate", path, "--dir", folder])
            #expect(gap.exitStatus == 65, "\(gap)")
            #expect(gap.stderr.contains("migration 0002 is missing"))
        }
    }
}
