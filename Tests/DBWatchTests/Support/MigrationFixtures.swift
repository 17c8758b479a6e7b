import DBWatch
import DBWatchTestSupport
import Foundation

/// The repository's own `Migrations/` directory (the demo schema).
let repositoryMigrationsPath: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // Support
    .deletingLastPathComponent()  // DBWatchTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // repository root
    .appendingPathComponent("Migrations").path

/// The tables the demo schema creates.
let demoSchemaTables = ["game", "game_player", "player", "player_search", "score_change", "team"]

extension TemporaryDirectory {
    /// Writes `files` (name → contents) into a new subdirectory and returns its path.
    func migrationDirectory(_ files: [String: String], named name: String = "Migrations") throws -> String {
        let directory = file(name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (fileName, contents) in files {
            try Data(contents.utf8).write(to: URL(fileURLWithPath: directory + "/" + fileName))
        }
        return directory
    }
}

/// The names of the tables and views of a database, sorted, SQLite's own excluded.
func schemaObjectNames(in writer: some DatabaseWriter, type: String = "table") async throws -> [String] {
    try await writer.read { db in
        try db.fetchAll(
            String.self,
            sql: "SELECT name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%' ORDER BY name",
            arguments: [type])
    }
}

/// The whole schema as `type name: sql` lines, sorted, without the migrations table.
func schemaDump(of writer: some DatabaseWriter) async throws -> [String] {
    try await writer.read { db in
        try db.fetchAll(
            sql: """
                SELECT type, name, tbl_name, sql FROM sqlite_master
                WHERE name <> 'dbwatch_migrations' AND name NOT LIKE 'sqlite_autoindex_dbwatch_migrations%'
                ORDER BY type, name
                """
        ).map { row in
            let sql = try row.decode(String?.self, at: 3) ?? ""
            return "\(try row.decode(String.self, at: 0)) \(try row.decode(String.self, at: 1)) "
                + "on \(try row.decode(String.self, at: 2)): \(sql)"
        }
    }
}

/// The numbers recorded in `dbwatch_migrations`, in order (empty without the table).
func recordedMigrationNumbers(in writer: some DatabaseWriter) async throws -> [Int] {
    try await writer.read { db in
        let exists =
            try db.fetchOne(
                Int.self, sql: "SELECT count(*) FROM sqlite_master WHERE name = 'dbwatch_migrations'") ?? 0
        guard exists > 0 else { return [] }
        return try db.fetchAll(Int.self, sql: "SELECT number FROM dbwatch_migrations ORDER BY number")
    }
}

/// Whether the writer connection enforces foreign keys (`PRAGMA foreign_keys`).
func foreignKeysAreOn(in writer: some DatabaseWriter) async throws -> Bool {
    try await writer.writeWithoutTransaction { db in try db.fetchOne(Bool.self, sql: "PRAGMA foreign_keys") ?? false }
}
