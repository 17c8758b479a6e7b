/// A migration recorded as applied in the database's `dbwatch_migrations`
/// table.
///
/// ```swift
/// let status = try await migrator.status(of: queue)
/// for record in status.applied {
///     logger.info("\(record.number) \(record.name) \(record.appliedAt)")  // 1 create_player 2025-01-31T09:12:45.123Z
/// }
/// ```
public struct AppliedMigration: Hashable, Sendable, CustomStringConvertible {
    /// The migration's number.
    ///
    /// ```swift
    /// status.applied.map(\.number)   // [1, 2]
    /// ```
    public let number: Int
    /// The migration's name (the description part of its file name) when it
    /// was applied.
    ///
    /// ```swift
    /// status.applied.first?.name   // "create_team_and_player"
    /// ```
    public let name: String
    /// The SHA-256 of the migration's SQL when it was applied, as 64
    /// lowercase hexadecimal digits.
    ///
    /// ```swift
    /// record.checksum == migration.checksum   // false once the file was edited
    /// ```
    public let checksum: String
    /// When it was applied, in UTC, as SQLite wrote it (ISO 8601 with
    /// milliseconds).
    ///
    /// ```swift
    /// record.appliedAt   // "2025-01-31T09:12:45.123Z"
    /// ```
    public let appliedAt: String

    init(number: Int, name: String, checksum: String, appliedAt: String) {
        self.number = number
        self.name = name
        self.checksum = checksum
        self.appliedAt = appliedAt
    }

    /// The file name the migration had: `0001_create_player.sql`.
    ///
    /// ```swift
    /// status.unknown.map(\.fileName)   // ["0007_add_trophy.sql"]
    /// ```
    public var fileName: String { Migration.fileName(number: number, name: name) }

    /// The file name and when it was applied.
    ///
    /// ```swift
    /// "\(record)"   // "0001_create_player.sql (applied 2025-01-31T09:12:45.123Z)"
    /// ```
    public var description: String { "\(fileName) (applied \(appliedAt))" }
}
