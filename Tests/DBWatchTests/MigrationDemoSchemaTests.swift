import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

@Suite("Migrations: the demo schema in Migrations/")
struct MigrationDemoSchemaTests {
    @Test func libraryAppliesTheRepositoryMigrations() async throws {
        let migrator = try Migrator(directory: repositoryMigrationsPath)
        #expect(migrator.migrations.count >= 4)
        let queue = try DatabaseQueue()
        let applied = try await migrator.migrate(queue)
        #expect(applied == migrator.migrations)
        let tables = try await schemaObjectNames(in: queue)
        for table in demoSchemaTables + ["dbwatch_migrations"] {
            #expect(tables.contains(table), "missing table \(table)")
        }
        #expect(try await schemaObjectNames(in: queue, type: "view") == ["team_score"])
        #expect(try await schemaObjectNames(in: queue, type: "trigger").count >= 4)
        #expect(try await migrator.status(of: queue).isUpToDate)
    }

    @Test(
        .enabled(
            if: SQLiteShell.isAvailable,
            "the stock sqlite3 shell is not installed at /usr/bin/sqlite3 (CI installs it); not checked here"))
    func stockShellAppliesEachFileInOrder() async throws {
        try await withTemporaryDirectory { directory in
            try await withTimeout {
                let migrator = try Migrator(directory: repositoryMigrationsPath)
                let shellPath = directory.file("shell.sqlite")
                for migration in migrator.migrations {
                    // sqlite3 db < file
                    let output = try await ChildProcess.run(
                        [SQLiteShell.path, shellPath],
                        input: .file(repositoryMigrationsPath + "/" + migration.fileName))
                    #expect(output.exitStatus == 0, "\(migration.fileName): \(output.stderr)")
                    #expect(output.stderr.isEmpty, "\(migration.fileName): \(output.stderr)")
                }
                let shellQueue = try DatabaseQueue(path: shellPath)
                let tables = try await schemaObjectNames(in: shellQueue)
                for table in demoSchemaTables {
                    #expect(tables.contains(table), "missing table \(table)")
                }
                #expect(try await schemaObjectNames(in: shellQueue, type: "view") == ["team_score"])

                // The shell and the library build the same schema.
                let libraryQueue = try DatabaseQueue(path: directory.file("library.sqlite"))
                try await migrator.migrate(libraryQueue)
                #expect(try await schemaDump(of: shellQueue) == schemaDump(of: libraryQueue))
            }
        }
    }

    /// What observation will have to handle: a trigger, a view, a cascade,
    /// a WITHOUT ROWID table and an FTS5 table kept in sync by triggers.
    @Test func demoSchemaBehaves() async throws {
        let queue = try DatabaseQueue()
        try await Migrator(directory: repositoryMigrationsPath).migrate(queue)
        try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO team (id, name) VALUES (1, 'Reds'), (2, 'Blues');
                    INSERT INTO player (id, name, score, team_id) VALUES
                        (1, 'Arthur', 100, 1), (2, 'Barbara', 80, 1), (3, 'Craig', 50, 2), (4, 'Free Agent', 10, NULL);
                    UPDATE player SET score = 120 WHERE name = 'Arthur';
                    INSERT INTO game (id, home_team_id, away_team_id, played_at) VALUES (1, 1, 2, '2025-01-31');
                    INSERT INTO game_player (game_id, player_id, points) VALUES (1, 1, 3), (1, 3, 1);
                    """)
        }
        let history = try await queue.read { db in
            try db.fetchAll(sql: "SELECT player_id, old_score, new_score FROM score_change")
        }
        #expect(history == [Row(["player_id": 1, "old_score": 100, "new_score": 120])])
        let totals = try await queue.read { db in
            try db.fetchAll(sql: "SELECT team_name, player_count, total_score FROM team_score ORDER BY team_id")
        }
        #expect(
            totals == [
                Row(["team_name": "Reds", "player_count": 2, "total_score": 200]),
                Row(["team_name": "Blues", "player_count": 1, "total_score": 50]),
            ])
        let search = """
            SELECT player.name FROM player_search JOIN player ON player.id = player_search.rowid
            WHERE player_search MATCH ? ORDER BY player.id
            """
        #expect(
            try await queue.read { db in try db.fetchAll(String.self, sql: search, arguments: ["arth*"]) } == ["Arthur"]
        )

        // Renaming keeps the search index in sync.
        try await queue.write { db in try db.execute(sql: "UPDATE player SET name = 'Arturo' WHERE id = 1") }
        #expect(try await queue.read { db in try db.fetchAll(String.self, sql: search, arguments: ["arth*"]) } == [])
        #expect(
            try await queue.read { db in try db.fetchAll(String.self, sql: search, arguments: ["artu*"]) } == ["Arturo"]
        )

        // Deleting a team cascades to its players, their history, games and the search index.
        try await queue.write { db in try db.execute(sql: "DELETE FROM team WHERE name = 'Reds'") }
        let left = try await queue.read { db in
            try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY id")
        }
        #expect(left == ["Craig", "Free Agent"])
        let counts = try await queue.read { db in
            try db.fetchAll(
                Int.self,
                sql: """
                    SELECT count(*) FROM score_change UNION ALL
                    SELECT count(*) FROM game UNION ALL
                    SELECT count(*) FROM game_player
                    """)
        }
        #expect(counts == [0, 0, 0])
        #expect(try await queue.read { db in try db.fetchAll(String.self, sql: search, arguments: ["artu*"]) } == [])
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO player_search (player_search) VALUES ('integrity-check')")
        }

        // A game needs two different teams.
        await #expect(throws: SQLiteError.self) {
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO game (home_team_id, away_team_id, played_at) VALUES (2, 2, 'x')")
            }
        }
    }
}
