import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

@Suite("Migrations: applying")
struct MigrationTests {
    static let first = Migration(
        number: 1, name: "create_team",
        sql: """
            CREATE TABLE team (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            INSERT INTO team (name) VALUES ('Reds');
            """)
    static let second = Migration(
        number: 2, name: "create_player",
        sql: """
            -- Players belong to teams.
            CREATE TABLE player (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                score INTEGER NOT NULL DEFAULT 0,
                team_id INTEGER REFERENCES team(id) ON DELETE CASCADE
            );
            INSERT INTO player (name, team_id) VALUES ('Arthur', 1);
            """)
    static let third = Migration(
        number: 3, name: "create_game",
        sql: "CREATE TABLE game (id INTEGER PRIMARY KEY, played_at TEXT NOT NULL);\n")

    static let migrator = try! Migrator(migrations: [first, second, third])

    @Test func appliesFromScratch() async throws {
        let queue = try DatabaseQueue()
        let applied = try await Self.migrator.migrate(queue)
        #expect(applied == [Self.first, Self.second, Self.third])
        #expect(try await schemaObjectNames(in: queue) == ["dbwatch_migrations", "game", "player", "team"])
        let players = try await queue.read { db in try db.fetchAll(String.self, sql: "SELECT name FROM player") }
        #expect(players == ["Arthur"])

        let records = try await queue.read { db in
            try db.fetchAll(sql: "SELECT number, name, checksum, applied_at FROM dbwatch_migrations ORDER BY number")
        }
        #expect(try records.map { try $0.decode(Int.self, at: 0) } == [1, 2, 3])
        #expect(
            try records.map { try $0.decode(String.self, at: 1) } == ["create_team", "create_player", "create_game"])
        #expect(try records.map { try $0.decode(String.self, at: 2) } == applied.map(\.checksum))
        for record in records {
            let appliedAt = try record.decode(String.self, at: 3)
            #expect(appliedAt.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(appliedAt)")
        }

        let status = try await Self.migrator.status(of: queue)
        #expect(status.isUpToDate)
        #expect(status.applied.map(\.number) == [1, 2, 3])
        #expect(status.applied.map(\.fileName) == applied.map(\.fileName))
    }

    @Test func rerunningAppliesNothing() async throws {
        let queue = try DatabaseQueue()
        try await Self.migrator.migrate(queue)
        let before = try await queue.read { db in try db.fetchAll(sql: "SELECT * FROM dbwatch_migrations") }
        let changesBefore = try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT total_changes()") }

        #expect(try await Self.migrator.dryRun(queue).isEmpty)
        #expect(try await Self.migrator.migrate(queue).isEmpty)

        let after = try await queue.read { db in try db.fetchAll(sql: "SELECT * FROM dbwatch_migrations") }
        let changesAfter = try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT total_changes()") }
        #expect(after == before)
        #expect(changesAfter == changesBefore)
        #expect(try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM team") } == 1)
    }

    @Test func failingMigrationInTheMiddleRollsBackOnlyItself() async throws {
        let failing = Migration(
            number: 2, name: "create_player",
            sql: """
                CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                INSERT INTO player (name) VALUES ('Arthur');
                UPDATE team SET name = 'Blues';

                -- The typo below fails.
                INSERT INTO players (name)
                VALUES ('Barbara');
                CREATE TABLE never (x);
                """)
        let migrator = try Migrator(migrations: [Self.first, failing, Self.third])
        let queue = try DatabaseQueue()

        let error = try await #require(throws: MigrationError.self) { try await migrator.migrate(queue) }
        guard error.code == .statementFailed, let sqliteError = error.sqliteError else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(error.fileName == "0002_create_player.sql")
        #expect(error.line == 6)
        #expect(error.statement == "INSERT INTO players (name)\nVALUES ('Barbara');")
        #expect(sqliteError.code == .error)
        #expect(sqliteError.message == "no such table: players")
        #expect(error.description.contains("0002_create_player.sql"))
        #expect(error.description.contains("line 6"))
        #expect(error.description.contains("no such table: players"))

        // The first migration stays; nothing of the second remains; the third did not run.
        #expect(try await schemaObjectNames(in: queue) == ["dbwatch_migrations", "team"])
        #expect(try await queue.read { db in try db.fetchAll(String.self, sql: "SELECT name FROM team") } == ["Reds"])
        #expect(try await recordedMigrationNumbers(in: queue) == [1])
        let status = try await migrator.status(of: queue)
        #expect(status.pending.map(\.number) == [2, 3])
        #expect(try await foreignKeysAreOn(in: queue), "the rollback path restores foreign keys too")

        // Once fixed, the rest applies.
        let fixed = try await Self.migrator.migrate(queue)
        #expect(fixed.map(\.number) == [2, 3])
        #expect(try await recordedMigrationNumbers(in: queue) == [1, 2, 3])
    }

    @Test func failingFirstMigrationLeavesAnUntouchedDatabase() async throws {
        let migrator = try Migrator(migrations: [
            Migration(number: 1, name: "broken", sql: "CREATE TABLE a (x);\nCREATE TABLE a (y);\n")
        ])
        let queue = try DatabaseQueue()
        let error = try await #require(throws: MigrationError.self) { try await migrator.migrate(queue) }
        guard error.code == .statementFailed, error.line == 2, error.statement == "CREATE TABLE a (y);",
            let sqliteError = error.sqliteError
        else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(sqliteError.message == "table a already exists")
        #expect(try await schemaObjectNames(in: queue).isEmpty)
    }

    @Test func constraintErrorsKeepTheirExtendedCode() async throws {
        let migrator = try Migrator(migrations: [
            Self.first,
            Migration(number: 2, name: "duplicate_team", sql: "INSERT INTO team (name) VALUES ('Reds');"),
        ])
        let queue = try DatabaseQueue()
        let error = try await #require(throws: MigrationError.self) { try await migrator.migrate(queue) }
        guard error.code == .statementFailed, let sqliteError = error.sqliteError else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(sqliteError.code == .constraintUnique)
        #expect(try await recordedMigrationNumbers(in: queue) == [1])
    }

    @Test func foreignKeyViolationsNameTheTableAndRollBack() async throws {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let queue = try DatabaseQueue(configuration: configuration)
        let orphan = Migration(
            number: 3, name: "orphan",
            sql: """
                CREATE TABLE game (id INTEGER PRIMARY KEY);
                INSERT INTO player (name, team_id) VALUES ('Nobody', 42);
                """)
        let migrator = try Migrator(migrations: [Self.first, Self.second, orphan])
        let error = try await #require(throws: MigrationError.self) { try await migrator.migrate(queue) }
        guard error.code == .foreignKeyViolation else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(error.fileName == "0003_orphan.sql")
        #expect(error.tables == ["player"])
        #expect(error.description.contains("player"))
        #expect(try await recordedMigrationNumbers(in: queue) == [1, 2])
        #expect(try await schemaObjectNames(in: queue) == ["dbwatch_migrations", "player", "team"])
        #expect(try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") } == 1)
        #expect(try await !foreignKeysAreOn(in: queue), "configured off, foreign keys stay off")
    }

    @Test func deferredForeignKeysAreCheckedBeforeCommit() async throws {
        let queue = try DatabaseQueue()
        let migrator = try Migrator(migrations: [
            Self.first,
            Migration(
                number: 2, name: "deferred",
                sql: """
                    CREATE TABLE membership (
                        team_id INTEGER NOT NULL REFERENCES team(id) DEFERRABLE INITIALLY DEFERRED
                    );
                    INSERT INTO membership (team_id) VALUES (99);
                    """),
        ])
        let error = try await #require(throws: MigrationError.self) { try await migrator.migrate(queue) }
        guard error.code == .foreignKeyViolation, error.fileName == "0002_deferred.sql", error.tables == ["membership"]
        else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(try await schemaObjectNames(in: queue) == ["dbwatch_migrations", "team"])
    }

    @Test func editedAppliedMigrationIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let path = try directory.migrationDirectory([
                Self.first.fileName: Self.first.sql, Self.second.fileName: Self.second.sql,
            ])
            let queue = try DatabaseQueue(path: directory.file("db.sqlite"))
            #expect(try await Migrator(directory: path).migrate(queue).count == 2)

            // Someone edits an applied file and adds a new one.
            try Data((Self.second.sql + "CREATE INDEX player_on_name ON player(name);\n").utf8)
                .write(to: URL(fileURLWithPath: path + "/" + Self.second.fileName))
            try Data(Self.third.sql.utf8).write(to: URL(fileURLWithPath: path + "/" + Self.third.fileName))
            let migrator = try Migrator(directory: path)

            let status = try await migrator.status(of: queue)
            #expect(status.applied.map(\.number) == [1])
            #expect(status.changed.map(\.fileName) == ["0002_create_player.sql"])
            #expect(status.pending.map(\.number) == [3])
            #expect(status.unknown.isEmpty)
            #expect(!status.matchesHistory)
            #expect(!status.isUpToDate)

            for attempt in ["dry run", "migrate"] {
                let error = try await #require(throws: MigrationError.self, "\(attempt)") {
                    if attempt == "migrate" {
                        try await migrator.migrate(queue)
                    } else {
                        _ = try await migrator.dryRun(queue)
                    }
                }
                guard error.code == .historyMismatch else {
                    Issue.record("unexpected \(error)")
                    return
                }
                #expect(error.changedMigrations.map(\.fileName) == ["0002_create_player.sql"])
                #expect(error.unknownMigrations.isEmpty)
                #expect(error.description.contains("0002_create_player.sql"))
            }
            // Nothing was applied: migration 3 is still pending.
            #expect(try await schemaObjectNames(in: queue) == ["dbwatch_migrations", "player", "team"])
            #expect(try await recordedMigrationNumbers(in: queue) == [1, 2])
        }
    }

    @Test func unknownAppliedMigrationIsRefused() async throws {
        let queue = try DatabaseQueue()
        try await Self.migrator.migrate(queue)
        // An older build of the app knows only the first two migrations.
        let older = try Migrator(migrations: [Self.first, Self.second])
        let status = try await older.status(of: queue)
        #expect(status.applied.map(\.number) == [1, 2])
        #expect(status.unknown.map(\.fileName) == ["0003_create_game.sql"])
        #expect(status.pending.isEmpty && status.changed.isEmpty)

        let error = try await #require(throws: MigrationError.self) { try await older.migrate(queue) }
        guard error.code == .historyMismatch else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(error.changedMigrations.isEmpty)
        #expect(error.unknownMigrations.map(\.number) == [3])
        #expect(error.unknownMigrations.first?.name == "create_game")
        #expect(error.unknownMigrations.first?.checksum == Self.third.checksum)
        #expect(error.description.contains("0003_create_game.sql"))
    }

    @Test func statusReportsAppliedPendingChangedAndUnknown() async throws {
        let queue = try DatabaseQueue()
        try await Self.migrator.migrate(queue, upTo: 2)
        // A newer app recorded a migration 9 this one has never seen.
        try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO dbwatch_migrations (number, name, checksum, applied_at)
                    VALUES (9, 'future', 'abc', '2030-01-01T00:00:00.000Z')
                    """)
        }
        let edited = Migration(number: 2, name: "create_player", sql: Self.second.sql + "-- edited\n")
        let migrator = try Migrator(migrations: [Self.first, edited, Self.third])
        let status = try await migrator.status(of: queue)
        #expect(status.applied.map(\.number) == [1])
        #expect(status.changed == [edited])
        #expect(status.pending == [Self.third])
        #expect(status.unknown.map(\.description) == ["0009_future.sql (applied 2030-01-01T00:00:00.000Z)"])
        let error = try await #require(throws: MigrationError.self) { try await migrator.migrate(queue) }
        guard error.code == .historyMismatch, error.changedMigrations == [edited],
            error.unknownMigrations.map(\.number) == [9]
        else {
            Issue.record("unexpected \(error)")
            return
        }
    }

    @Test(arguments: [
        "('abc', 'n', 'c', 'd')", "(1, NULL, 'c', 'd')", "(1.5, 'n', 'c', 'd')", "(1, 'n', x'00', 'd')",
    ])
    func anInvalidHistoryRecordIsATypedError(values: String) async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE dbwatch_migrations (number, name TEXT, checksum TEXT, applied_at TEXT);
                    INSERT INTO dbwatch_migrations VALUES \(values);
                    """)
        }
        for attempt in 0..<2 {
            let error = try await #require(throws: MigrationError.self) {
                if attempt == 0 {
                    _ = try await Self.migrator.status(of: queue)
                } else {
                    _ = try await Self.migrator.migrate(queue)
                }
            }
            guard error.code == .invalidHistory else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect("\(error)".contains("nothing is applied"))
        }
        #expect(try await schemaObjectNames(in: queue) == ["dbwatch_migrations"])
    }

    @Test func migratesUpToATarget() async throws {
        let queue = try DatabaseQueue()
        #expect(try await Self.migrator.dryRun(queue, upTo: 2).map(\.number) == [1, 2])
        #expect(try await Self.migrator.migrate(queue, upTo: 2).map(\.number) == [1, 2])
        #expect(try await Self.migrator.migrate(queue, upTo: 1).isEmpty)
        #expect(try await Self.migrator.migrate(queue, upTo: 2).isEmpty)
        #expect(try await Self.migrator.status(of: queue).pending == [Self.third])
        await #expect {
            try await Self.migrator.migrate(queue, upTo: 7)
        } throws: { error in
            guard let error = error as? MigrationError, error.code == .noSuchMigration else { return false }
            return error.number == 7
        }
        #expect(try await Self.migrator.migrate(queue, upTo: 3).map(\.number) == [3])
    }

    @Test func dryRunChangesNothing() async throws {
        let queue = try DatabaseQueue()
        #expect(try await Self.migrator.dryRun(queue) == [Self.first, Self.second, Self.third])
        #expect(try await schemaObjectNames(in: queue).isEmpty)
        #expect(try await Self.migrator.status(of: queue).pending.count == 3)
        try await Self.migrator.migrate(queue, upTo: 1)
        #expect(try await Self.migrator.dryRun(queue).map(\.number) == [2, 3])
        #expect(try await Self.migrator.dryRun(queue, upTo: 2).map(\.number) == [2])
        #expect(try await schemaObjectNames(in: queue) == ["dbwatch_migrations", "team"])
    }

    @Test func transactionControlIsRefused() async throws {
        let queue = try DatabaseQueue()
        let migrator = try Migrator(migrations: [
            Migration(
                number: 1, name: "own_transaction", sql: "CREATE TABLE a (x);\nBEGIN;\nCREATE TABLE b (y);\nCOMMIT;\n")
        ])
        let error = try await #require(throws: MigrationError.self) { try await migrator.migrate(queue) }
        guard error.code == .statementFailed, error.fileName == "0001_own_transaction.sql", error.line == 2,
            error.statement == "BEGIN;", let sqliteError = error.sqliteError
        else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(sqliteError.code == .misuse)
        #expect(try await schemaObjectNames(in: queue).isEmpty)
    }

    @Test func savepointsInsideAMigrationWork() async throws {
        let queue = try DatabaseQueue()
        let migrator = try Migrator(migrations: [
            Migration(
                number: 1, name: "savepoints",
                sql: """
                    SAVEPOINT attempt;
                    CREATE TABLE undone (x);
                    ROLLBACK TO attempt;
                    RELEASE attempt;
                    CREATE TABLE kept (y);
                    """)
        ])
        #expect(try await migrator.migrate(queue).count == 1)
        #expect(try await schemaObjectNames(in: queue) == ["dbwatch_migrations", "kept"])
    }

    @Test func trickyScriptsApply() async throws {
        let queue = try DatabaseQueue()
        let migrator = try Migrator(migrations: [
            Migration(
                number: 1, name: "tricky",
                sql: """
                    /* A note; with semicolons; */
                    CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT NOT NULL); -- one; two
                    CREATE TABLE "audit;log" (note_id INTEGER, text TEXT);
                    CREATE TRIGGER note_audit AFTER INSERT ON note
                    BEGIN
                        INSERT INTO "audit;log" (note_id, text) VALUES (new.id, 'inserted; ' || new.text);
                        INSERT INTO "audit;log" (note_id, text) VALUES (new.id, 'END;');
                    END;
                    INSERT INTO note (text) VALUES ('a;b'), ('it''s; fine');
                    """)
        ])
        try await migrator.migrate(queue)
        let notes = try await queue.read { db in try db.fetchAll(String.self, sql: "SELECT text FROM note ORDER BY id")
        }
        #expect(notes == ["a;b", "it's; fine"])
        let audit = try await queue.read { db in
            try db.fetchAll(String.self, sql: "SELECT text FROM \"audit;log\" ORDER BY rowid")
        }
        #expect(audit == ["inserted; a;b", "END;", "inserted; it's; fine", "END;"])
    }

    @Test func emptyAndCommentOnlyMigrationsAreRecorded() async throws {
        let queue = try DatabaseQueue()
        let migrator = try Migrator(migrations: [
            Migration(number: 1, name: "empty", sql: ""),
            Migration(number: 2, name: "comments", sql: "-- nothing to do yet;\n/* really; */\n"),
        ])
        #expect(try await migrator.migrate(queue).count == 2)
        #expect(try await recordedMigrationNumbers(in: queue) == [1, 2])
        #expect(try await schemaObjectNames(in: queue) == ["dbwatch_migrations"])
    }

    /// Drops of every kind of schema object take effect, plain and with
    /// `IF EXISTS`, and a view can be redefined in one migration: a
    /// migration recorded as applied changed what it says.
    @Test(arguments: DatabaseKind.queueAndPool)
    func dropsAndRedefinitionsTakeEffect(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let writer = try Self.open(kind, in: directory)
            defer { writer.syncClose() }
            let migrator = try Migrator(migrations: [
                Migration(
                    number: 1, name: "create",
                    sql: """
                        CREATE TABLE t (a);
                        CREATE VIEW v AS SELECT a FROM t;
                        CREATE VIEW w AS SELECT a FROM t;
                        CREATE VIEW redefined AS SELECT a FROM t;
                        CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END;
                        CREATE TRIGGER tr2 AFTER INSERT ON t BEGIN SELECT 1; END;
                        CREATE INDEX i ON t (a);
                        CREATE INDEX i2 ON t (a);
                        CREATE VIRTUAL TABLE f USING fts5 (body);
                        CREATE VIRTUAL TABLE f2 USING fts5 (body);
                        CREATE TABLE old (x);
                        """),
                Migration(number: 2, name: "drop_view", sql: "DROP VIEW v;\n"),
                Migration(
                    number: 3, name: "drop_the_rest",
                    sql: """
                        DROP VIEW IF EXISTS w;
                        DROP VIEW IF EXISTS never_was;
                        DROP TRIGGER tr;
                        DROP TRIGGER IF EXISTS tr2;
                        DROP INDEX i;
                        DROP INDEX IF EXISTS i2;
                        DROP TABLE f;
                        DROP TABLE IF EXISTS f2;
                        DROP TABLE IF EXISTS old;
                        """),
                Migration(
                    number: 4, name: "redefine_view",
                    sql: "DROP VIEW redefined;\nCREATE VIEW redefined AS SELECT a * 2 AS a FROM t;\n"),
            ])
            #expect(try await migrator.migrate(writer).map(\.number) == [1, 2, 3, 4])
            #expect(
                try await schemaDump(of: writer) == [
                    "table t on t: CREATE TABLE t (a)",
                    "view redefined on redefined: CREATE VIEW redefined AS SELECT a * 2 AS a FROM t",
                ])
            #expect(try await recordedMigrationNumbers(in: writer) == [1, 2, 3, 4])
        }
    }

    // MARK: - Foreign keys while migrating

    /// The SQLite documentation's table rebuild, here to add a column and a
    /// CHECK to `team`, which `player` references with `ON DELETE CASCADE`.
    static let rebuildTeam = Migration(
        number: 3, name: "rebuild_team",
        sql: """
            CREATE TABLE new_team (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE CHECK (name <> ''),
                city TEXT
            );
            INSERT INTO new_team (id, name) SELECT id, name FROM team;
            DROP TABLE team;
            ALTER TABLE new_team RENAME TO team;
            """)

    private static func open(_ kind: DatabaseKind, in directory: TemporaryDirectory) throws -> any DatabaseWriter {
        try kind.open(in: directory)
    }

    private static func count(_ table: String, in writer: some DatabaseWriter) async throws -> Int {
        try await writer.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM \(table)") ?? 0 }
    }

    /// Without the migrator's care, the rebuild's DROP TABLE deletes every
    /// player through the cascade: what the test below guards against.
    @Test func tableRebuildWithForeignKeysOnCascades() async throws {
        let queue = try DatabaseQueue()
        try await Self.migrator.migrate(queue, upTo: 2)
        #expect(try await Self.count("player", in: queue) == 1)
        try await queue.write { db in try db.execute(sql: Self.rebuildTeam.sql) }
        #expect(try await Self.count("player", in: queue) == 0)
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func tableRebuildDoesNotCascadeIntoChildTables(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let writer = try Self.open(kind, in: directory)
            try await Self.migrator.migrate(writer, upTo: 2)
            try await writer.write { db in
                try db.execute(sql: "INSERT INTO team (name) VALUES ('Blues')")
                try db.execute(sql: "INSERT INTO player (name, team_id) VALUES ('Barbara', 1), ('Craig', 2)")
            }
            #expect(try await foreignKeysAreOn(in: writer))

            let migrator = try Migrator(migrations: [Self.first, Self.second, Self.rebuildTeam])
            #expect(try await migrator.migrate(writer) == [Self.rebuildTeam])

            // Every player survived the DROP TABLE of their team.
            let players = try await writer.read { db in
                try db.fetchAll(sql: "SELECT name, team_id FROM player ORDER BY id").map {
                    "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Int.self, at: 1))"
                }
            }
            #expect(players == ["Arthur 1", "Barbara 1", "Craig 2"])
            let teamSQL = try await writer.read { db in
                try db.fetchOne(String.self, sql: "SELECT sql FROM sqlite_master WHERE name = 'team'")
            }
            #expect(teamSQL?.contains("city TEXT") == true)
            #expect(try await schemaObjectNames(in: writer) == ["dbwatch_migrations", "player", "team"])
            #expect(try await recordedMigrationNumbers(in: writer) == [1, 2, 3])

            // Enforcement is back on, and the cascade now goes through the rebuilt table.
            #expect(try await foreignKeysAreOn(in: writer))
            try await writer.write { db in try db.execute(sql: "DELETE FROM team WHERE name = 'Reds'") }
            #expect(try await Self.count("player", in: writer) == 1)
            await #expect(throws: SQLiteError.self) {
                try await writer.write { db in
                    try db.execute(sql: "INSERT INTO player (name, team_id) VALUES ('Nobody', 42)")
                }
            }
            await writer.close()
        }
    }

    /// With enforcement off, `PRAGMA foreign_key_check` still refuses a
    /// rebuild that loses referenced rows.
    @Test func tableRebuildThatLosesReferencedRowsIsRolledBack() async throws {
        let queue = try DatabaseQueue()
        try await Self.migrator.migrate(queue, upTo: 2)
        let lossy = Migration(
            number: 3, name: "rebuild_team",
            sql: Self.rebuildTeam.sql.replacingOccurrences(
                of: "SELECT id, name FROM team;", with: "SELECT id, name FROM team WHERE name <> 'Reds';"))
        #expect(lossy.sql != Self.rebuildTeam.sql)
        let migrator = try Migrator(migrations: [Self.first, Self.second, lossy])
        let error = try await #require(throws: MigrationError.self) { try await migrator.migrate(queue) }
        guard error.code == .foreignKeyViolation, error.fileName == "0003_rebuild_team.sql", error.tables == ["player"]
        else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(try await queue.read { db in try db.fetchAll(String.self, sql: "SELECT name FROM team") } == ["Reds"])
        #expect(try await Self.count("player", in: queue) == 1)
        #expect(try await recordedMigrationNumbers(in: queue) == [1, 2])
        #expect(try await foreignKeysAreOn(in: queue))
    }

    /// A migration cancelled while a statement runs is interrupted, rolled
    /// back, reported as `CancellationError`, and leaves foreign keys on.
    @Test func cancelledMigrationRollsBackAndRestoresForeignKeys() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let pool = try DatabasePool(path: path)
            try await Self.migrator.migrate(pool, upTo: 2)
            let endless = Migration(
                number: 3, name: "endless",
                sql: """
                    CREATE TABLE game (id INTEGER PRIMARY KEY);
                    SELECT count(*)
                    FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c);
                    """)
            let migrator = try Migrator(migrations: [Self.first, Self.second, endless])
            let task = Task { try await migrator.migrate(pool) }
            defer { task.cancel() }

            // Another connection that never waits for locks tells when the
            // migration holds the write lock, that is, runs its statements.
            var probeConfiguration = Configuration()
            probeConfiguration.busyTimeout = .zero
            let probe = try DatabaseQueue(path: path, configuration: probeConfiguration)
            // SQLite announces no lock: the probe checks every millisecond.
            try await withTimeout {
                while true {
                    do {
                        try await probe.write { _ in }
                        try await Task.sleep(for: .milliseconds(1))
                    } catch let error as SQLiteError where error.code.primary == .busy {
                        break
                    }
                }
                // Wherever the migration is now (before its endless
                // statement or in it), cancelling stops it at once.
                task.cancel()
                await #expect(throws: CancellationError.self) { try await task.value }
            }
            await probe.close()

            #expect(try await recordedMigrationNumbers(in: pool) == [1, 2])
            #expect(try await schemaObjectNames(in: pool) == ["dbwatch_migrations", "player", "team"])
            #expect(try await foreignKeysAreOn(in: pool))
            #expect(try await migrator.status(of: pool).pending == [endless])
            await pool.close()
        }
    }

    @Test func worksWithAPoolOnAFile() async throws {
        try await withTemporaryDirectory { directory in
            try await withTimeout {
                let pool = try DatabasePool(path: directory.file("db.sqlite"))
                #expect(try await Self.migrator.migrate(pool).count == 3)
                #expect(try await Self.migrator.status(of: pool).isUpToDate)
                await pool.close()
                // Reopened, the history is there.
                let queue = try DatabaseQueue(path: directory.file("db.sqlite"))
                #expect(try await Self.migrator.migrate(queue).isEmpty)
                #expect(try await recordedMigrationNumbers(in: queue) == [1, 2, 3])
            }
        }
    }

    @Test func aDamagedDatabaseIsNotMigrated() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB);
                        WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000)
                        INSERT INTO t SELECT i, randomblob(100) FROM c;
                        """)
            }
            await queue.close()
            // Garbage over page 2, a page of t's b-tree.
            let file = try #require(FileHandle(forUpdatingAtPath: path))
            try file.seek(toOffset: 4096)
            try file.write(contentsOf: Data(repeating: 0x5A, count: 4096))
            try file.close()
            let damaged = try Data(contentsOf: URL(fileURLWithPath: path))

            let reopened = try DatabaseQueue(path: path)
            let error = try await #require(throws: SQLiteError.self) { try await Self.migrator.migrate(reopened) }
            #expect(error.code.primary == .corrupt)
            #expect(error.message?.contains("nothing was applied") == true)
            await reopened.close()
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == damaged)
        }
    }

    /// Rows that break a CHECK or NOT NULL constraint are data, not damage:
    /// the migration that cleans them up must be able to run.
    @Test func constraintViolationsDoNotBlockMigrations() async throws {
        let queue = try DatabaseQueue()
        let create = Migration(
            number: 1, name: "create", sql: "CREATE TABLE t (a INTEGER CHECK (a > 0), b TEXT NOT NULL);")
        let cleanup = Migration(number: 2, name: "cleanup", sql: "DELETE FROM t WHERE a <= 0;")
        let migrator = try Migrator(migrations: [create, cleanup])
        try await migrator.migrate(queue, upTo: 1)
        try await queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA ignore_check_constraints = ON; INSERT INTO t VALUES (-1, 'x');")
            try db.execute(sql: "PRAGMA ignore_check_constraints = OFF")
        }
        let findings = try await queue.read { db in try db.fetchAll(String.self, sql: "PRAGMA quick_check") }
        #expect(findings.contains { $0.hasPrefix("CHECK constraint failed") }, "\(findings)")
        #expect(try await migrator.migrate(queue).map(\.number) == [2])
        #expect(try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") } == 0)
    }
}
