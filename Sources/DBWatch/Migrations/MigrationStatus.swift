/// Where a database stands against a ``Migrator``'s migrations.
///
/// ```swift
/// let status = try await migrator.status(of: queue)
/// if !status.matchesHistory {
///     logger.error("changed: \(status.changed), unknown: \(status.unknown)")
/// } else if !status.pending.isEmpty {
///     logger.info("to apply: \(status.pending.map(\.fileName))")
/// }
/// ```
public struct MigrationStatus: Hashable, Sendable {
    /// Applied migrations whose file is unchanged, in number order.
    ///
    /// ```swift
    /// status.applied.map(\.appliedAt)   // ["2025-01-31T09:12:45.123Z", …]
    /// ```
    public let applied: [AppliedMigration]
    /// Migrations not applied yet, in number order.
    ///
    /// ```swift
    /// status.pending.map(\.fileName)   // ["0004_add_player_search.sql"]
    /// ```
    public let pending: [Migration]
    /// Applied migrations whose SQL changed since (the recorded checksum
    /// differs), in number order.
    ///
    /// ```swift
    /// status.changed.map(\.fileName)   // ["0002_add_score_history.sql"]
    /// ```
    public let changed: [Migration]
    /// Migrations recorded as applied that the migrator does not have (a
    /// newer version of the app migrated this database, or a file was
    /// deleted), in number order.
    ///
    /// ```swift
    /// status.unknown.map(\.fileName)   // ["0005_add_trophy.sql"]
    /// ```
    public let unknown: [AppliedMigration]

    /// Compares the migrations with the records of the database.
    init(migrations: [Migration], records: [AppliedMigration]) {
        let recordsByNumber = Dictionary(records.map { ($0.number, $0) }, uniquingKeysWith: { first, _ in first })
        let numbers = Set(migrations.map(\.number))
        var applied: [AppliedMigration] = []
        var pending: [Migration] = []
        var changed: [Migration] = []
        for migration in migrations.sorted(by: { $0.number < $1.number }) {
            if let record = recordsByNumber[migration.number] {
                if record.checksum == migration.checksum {
                    applied.append(record)
                } else {
                    changed.append(migration)
                }
            } else {
                pending.append(migration)
            }
        }
        self.applied = applied
        self.pending = pending
        self.changed = changed
        self.unknown = records.filter { !numbers.contains($0.number) }.sorted { $0.number < $1.number }
    }

    /// Whether the database's history agrees with the migrations: nothing
    /// changed, nothing unknown. ``Migrator/migrate(_:upTo:checksIntegrity:)`` refuses to run
    /// otherwise.
    ///
    /// ```swift
    /// guard status.matchesHistory else { throw MyAppError.schemaConflict }
    /// ```
    public var matchesHistory: Bool { changed.isEmpty && unknown.isEmpty }

    /// Whether every migration is applied and the history agrees.
    ///
    /// ```swift
    /// if try await migrator.status(of: queue).isUpToDate { logger.info("schema is current") }
    /// ```
    public var isUpToDate: Bool { pending.isEmpty && matchesHistory }

    /// Throws ``MigrationError/historyMismatch(changed:unknown:)`` unless
    /// ``matchesHistory``.
    func checkHistory() throws {
        guard matchesHistory else { throw MigrationError.historyMismatch(changed: changed, unknown: unknown) }
    }
}
