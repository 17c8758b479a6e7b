import DBWatch

/// The demo schema, the files of `Migrations/`, carried inside the binary
/// so that `dbwatch demo` works from any directory: `Demo/Migrations` links
/// to that folder, whose files SwiftPM embeds as byte arrays
/// (`.embedInCode` in Package.swift).
///
/// ```swift
/// let migrator = try Migrator(migrations: DemoMigrations.migrations)
/// ```
enum DemoMigrations {
    /// Each file of `Migrations/`: its name and its exact text, in number
    /// order. A file added there is listed here too (DemoMigrationsTests
    /// fails until it is).
    static let files: [(fileName: String, sql: String)] = [
        ("0001_create_team_and_player.sql", text(PackageResources._001_create_team_and_player_sql)),
        ("0002_add_score_history.sql", text(PackageResources._002_add_score_history_sql)),
        ("0003_create_game.sql", text(PackageResources._003_create_game_sql)),
        ("0004_add_player_search.sql", text(PackageResources._004_add_player_search_sql)),
    ]

    /// The files as migrations: number and name from the file name.
    static var migrations: [Migration] {
        files.map { file in
            let stem = file.fileName.dropLast(".sql".count)
            let separator = stem.firstIndex(of: "_")!
            return Migration(
                number: Int(stem[..<separator])!, name: String(stem[stem.index(after: separator)...]), sql: file.sql)
        }
    }

    /// An embedded file's text (the migrations are UTF-8).
    private static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}
