/// Why migrations could not be loaded or applied.
///
/// Errors from loading (``invalidFileName(_:)``, ``duplicateNumber(_:fileNames:)``,
/// ``gap(missing:next:)``, ``unreadable(path:reason:)``, ``invalidEncoding(path:)``) come from the
/// ``Migrator`` initializers. Errors from migrating leave the database as it
/// was before the failing migration: earlier migrations of the same run stay
/// applied, the failing one is rolled back completely.
///
/// ```swift
/// do {
///     try await migrator.migrate(queue)
/// } catch let MigrationError.statementFailed(fileName, line, statement, error) {
///     logger.error("\(fileName):\(line): \(error.message ?? "")\n\(statement)")
/// } catch let MigrationError.historyMismatch(changed, unknown) {
///     logger.error("changed after being applied: \(changed), unknown to this app: \(unknown)")
/// }
/// ```
public enum MigrationError: Error, Sendable, CustomStringConvertible {
    /// A `.sql` file (or an in-code migration) whose name is not
    /// `NNNN_description.sql`: four or more digits making a number of at
    /// least 1, `_`, then letters, digits, `_` or `-`.
    ///
    /// ```swift
    /// MigrationError.invalidFileName("3_add_team.sql")
    /// ```
    case invalidFileName(String)
    /// Several migrations share a number; their file names, sorted.
    ///
    /// ```swift
    /// MigrationError.duplicateNumber(3, fileNames: ["0003_add_game.sql", "0003_add_team.sql"])
    /// ```
    case duplicateNumber(Int, fileNames: [String])
    /// Numbers must run 1, 2, 3, … without gaps: `missing` are absent,
    /// `next` is the file that follows them.
    ///
    /// ```swift
    /// MigrationError.gap(missing: 3...3, next: "0004_add_player_search.sql")
    /// ```
    case gap(missing: ClosedRange<Int>, next: String)
    /// The directory or a file cannot be read; `reason` is the system's
    /// (`Permission denied`, `No such file or directory`).
    ///
    /// ```swift
    /// MigrationError.unreadable(path: "Migrations/0001_a.sql", reason: "Permission denied")
    /// ```
    case unreadable(path: String, reason: String)
    /// A migration file is not UTF-8 text.
    ///
    /// ```swift
    /// MigrationError.invalidEncoding(path: "Migrations/0002_latin1.sql")
    /// ```
    case invalidEncoding(path: String)
    /// `migrate(_:upTo:)` or `dryRun(_:upTo:)` named a number no migration has.
    ///
    /// ```swift
    /// try await migrator.migrate(queue, upTo: 99)   // throws MigrationError.noSuchMigration(99)
    /// ```
    case noSuchMigration(Int)
    /// The database's history does not match the migrations: applied
    /// migrations whose SQL changed since, and applied migrations the
    /// migrator does not know. Nothing was applied.
    ///
    /// ```swift
    /// catch let MigrationError.historyMismatch(changed, unknown) { logger.error("\(changed) \(unknown)") }
    /// ```
    case historyMismatch(changed: [Migration], unknown: [AppliedMigration])
    /// A statement failed; its migration was rolled back. `line` is the
    /// 1-based line of the file where the statement starts, `error` SQLite's
    /// error.
    ///
    /// ```swift
    /// catch let MigrationError.statementFailed(file, line, _, error) where error.code == .constraintUnique { … }
    /// ```
    case statementFailed(fileName: String, line: Int, statement: String, error: SQLiteError)
    /// The migration left rows that violate foreign keys
    /// (`PRAGMA foreign_key_check`) in the named tables; it was rolled back.
    ///
    /// ```swift
    /// MigrationError.foreignKeyViolation(fileName: "0003_create_game.sql", tables: ["game"])
    /// ```
    case foreignKeyViolation(fileName: String, tables: [String])
    /// The table of applied migrations (`dbwatch_migrations`) holds a
    /// record DBWatch did not write (a number that is not an integer, a
    /// missing name or checksum): the history cannot be trusted, and
    /// nothing was applied.
    ///
    /// ```swift
    /// MigrationError.invalidHistory("number 'abc' is not an integer")
    /// ```
    case invalidHistory(String)

    /// A one-paragraph explanation naming the files involved.
    ///
    /// ```swift
    /// "\(error)"   // "migration 0002_add_score_history.sql failed at line 12 and was rolled back: SQLite error 1 …"
    /// ```
    public var description: String {
        switch self {
        case .invalidFileName(let name):
            return "invalid migration file name `\(name)`: expected NNNN_description.sql "
                + "(four or more digits from 0001, `_`, then letters, digits, `_` or `-`)"
        case .duplicateNumber(let number, let fileNames):
            return "several migrations have the number \(number): \(fileNames.joined(separator: ", "))"
        case .gap(let missing, let next):
            let what =
                missing.count == 1
                ? "migration \(Migration.paddedNumber(missing.lowerBound)) is missing"
                : "migrations \(Migration.paddedNumber(missing.lowerBound)) to "
                    + "\(Migration.paddedNumber(missing.upperBound)) are missing"
            return "\(what) before \(next): migration numbers must run 1, 2, 3, … without gaps"
        case .unreadable(let path, let reason):
            return "cannot read migrations at \(path): \(reason)"
        case .invalidEncoding(let path):
            return "the migration file \(path) is not valid UTF-8 text"
        case .noSuchMigration(let number):
            return "there is no migration \(Migration.paddedNumber(number))"
        case .historyMismatch(let changed, let unknown):
            var parts: [String] = []
            if !changed.isEmpty {
                parts.append("changed after being applied: \(changed.map(\.fileName).joined(separator: ", "))")
            }
            if !unknown.isEmpty {
                parts.append(
                    "applied but unknown to this migrator: \(unknown.map(\.description).joined(separator: ", "))")
            }
            return "the database's migration history does not match the migrations, nothing was applied; "
                + parts.joined(separator: "; ")
        case .statementFailed(let fileName, let line, _, let error):
            return "migration \(fileName) failed at line \(line) and was rolled back: \(error)"
        case .foreignKeyViolation(let fileName, let tables):
            return "migration \(fileName) leaves foreign key violations in \(tables.joined(separator: ", ")) "
                + "and was rolled back"
        case .invalidHistory(let reason):
            return "the table of applied migrations (dbwatch_migrations) holds an invalid record, "
                + "and nothing is applied while it does: \(reason)"
        }
    }
}
