/// Why migrations could not be loaded or applied.
///
/// Errors from loading (codes ``Code/invalidFileName``,
/// ``Code/duplicateNumber``, ``Code/gap``, ``Code/unreadable``,
/// ``Code/invalidEncoding``) come from the ``Migrator`` initializers. Errors
/// from migrating leave the database as it was before the failing
/// migration: earlier migrations of the same run stay applied, the failing
/// one is rolled back completely.
///
/// Branch on ``code``; the details of an error are properties, set for the
/// codes they belong to. A struct rather than an enum, so that a later
/// version may add codes without breaking a `switch`.
///
/// ```swift
/// do {
///     try await migrator.migrate(queue)
/// } catch let error as MigrationError where error.code == .statementFailed {
///     logger.error("\(error.fileName ?? ""):\(error.line ?? 0): \(error.sqliteError?.message ?? "")")
/// } catch MigrationError.Code.historyMismatch {
///     logger.error("the database was migrated by another version of this app")
/// }
/// ```
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    /// The kind of a ``MigrationError``; compare it (`error.code == .gap`)
    /// or match it in a `catch` (`catch MigrationError.Code.gap`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case invalidFileName, duplicateNumber, gap, unreadable, invalidEncoding, noSuchMigration
            case historyMismatch, statementFailed, foreignKeyViolation, invalidHistory
        }

        private let value: Value

        private init(_ value: Value) {
            self.value = value
        }

        /// A `.sql` file (or an in-code migration) whose name is not
        /// `NNNN_description.sql`: four or more digits making a number of at
        /// least 1, `_`, then letters, digits, `_` or `-` (``fileName``).
        public static let invalidFileName = Code(.invalidFileName)
        /// Several migrations share a ``number``; their ``fileNames``, sorted.
        public static let duplicateNumber = Code(.duplicateNumber)
        /// Numbers must run 1, 2, 3, … without gaps: ``missingNumbers`` are
        /// absent, ``fileName`` is the file that follows them.
        public static let gap = Code(.gap)
        /// The directory or a file cannot be read (``path``); ``reason`` is
        /// the system's (`Permission denied`, `No such file or directory`).
        public static let unreadable = Code(.unreadable)
        /// A migration file (``path``) is not UTF-8 text.
        public static let invalidEncoding = Code(.invalidEncoding)
        /// `migrate(_:upTo:)` or `dryRun(_:upTo:)` named a ``number`` no migration has.
        public static let noSuchMigration = Code(.noSuchMigration)
        /// The database's history does not match the migrations: applied
        /// migrations whose SQL changed since (``changedMigrations``), and
        /// applied migrations the migrator does not know
        /// (``unknownMigrations``). Nothing was applied.
        public static let historyMismatch = Code(.historyMismatch)
        /// A statement failed; its migration was rolled back: the
        /// migration's ``fileName``, the 1-based ``line`` of the file where
        /// the ``statement`` starts, and SQLite's error (``sqliteError``).
        public static let statementFailed = Code(.statementFailed)
        /// The migration (``fileName``) left rows that violate foreign keys
        /// (`PRAGMA foreign_key_check`) in ``tables``; it was rolled back.
        public static let foreignKeyViolation = Code(.foreignKeyViolation)
        /// The table of applied migrations (`dbwatch_migrations`) holds a
        /// record DBWatch did not write (a number that is not an integer, a
        /// missing name or checksum; the ``reason``): the history cannot be
        /// trusted, and nothing was applied.
        public static let invalidHistory = Code(.invalidHistory)

        /// The code's name, for example `"gap"`.
        public var description: String { "\(value)" }

        /// Matches a ``MigrationError`` of this code: `catch MigrationError.Code.gap { … }`.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? MigrationError)?.code == code
        }
    }

    /// The error's details, one case per code; private, so that codes may
    /// be added.
    private enum Details: Sendable {
        case invalidFileName(String)
        case duplicateNumber(Int, fileNames: [String])
        case gap(missing: ClosedRange<Int>, next: String)
        case unreadable(path: String, reason: String)
        case invalidEncoding(path: String)
        case noSuchMigration(Int)
        case historyMismatch(changed: [Migration], unknown: [AppliedMigration])
        case statementFailed(fileName: String, line: Int, statement: String, error: SQLiteError)
        case foreignKeyViolation(fileName: String, tables: [String])
        case invalidHistory(String)
    }

    private let details: Details

    private init(_ details: Details) {
        self.details = details
    }

    /// What went wrong.
    ///
    /// ```swift
    /// catch let error as MigrationError where error.code == .noSuchMigration { … }
    /// ```
    public var code: Code {
        switch details {
        case .invalidFileName: return .invalidFileName
        case .duplicateNumber: return .duplicateNumber
        case .gap: return .gap
        case .unreadable: return .unreadable
        case .invalidEncoding: return .invalidEncoding
        case .noSuchMigration: return .noSuchMigration
        case .historyMismatch: return .historyMismatch
        case .statementFailed: return .statementFailed
        case .foreignKeyViolation: return .foreignKeyViolation
        case .invalidHistory: return .invalidHistory
        }
    }

    /// The migration's file name: the invalid name (``Code/invalidFileName``),
    /// the migration that failed (``Code/statementFailed``,
    /// ``Code/foreignKeyViolation``), or the file after the missing numbers
    /// (``Code/gap``); nil for other codes.
    public var fileName: String? {
        switch details {
        case .invalidFileName(let name): return name
        case .gap(_, let next): return next
        case .statementFailed(let fileName, _, _, _), .foreignKeyViolation(let fileName, _): return fileName
        default: return nil
        }
    }

    /// The files that share a number (``Code/duplicateNumber``), sorted; empty for other codes.
    public var fileNames: [String] {
        guard case .duplicateNumber(_, let fileNames) = details else { return [] }
        return fileNames
    }

    /// The number several migrations share (``Code/duplicateNumber``), or
    /// that no migration has (``Code/noSuchMigration``); nil for other codes.
    public var number: Int? {
        switch details {
        case .duplicateNumber(let number, _), .noSuchMigration(let number): return number
        default: return nil
        }
    }

    /// The numbers no migration has before ``fileName`` (``Code/gap``); nil for other codes.
    public var missingNumbers: ClosedRange<Int>? {
        guard case .gap(let missing, _) = details else { return nil }
        return missing
    }

    /// The directory or file that cannot be read (``Code/unreadable``) or is
    /// not UTF-8 (``Code/invalidEncoding``); nil for other codes.
    public var path: String? {
        switch details {
        case .unreadable(let path, _), .invalidEncoding(let path): return path
        default: return nil
        }
    }

    /// Why: the system's reason a path cannot be read (``Code/unreadable``),
    /// or what is wrong with a record of the history (``Code/invalidHistory``);
    /// nil for other codes.
    public var reason: String? {
        switch details {
        case .unreadable(_, let reason), .invalidHistory(let reason): return reason
        default: return nil
        }
    }

    /// Applied migrations whose SQL changed since (``Code/historyMismatch``); empty for other codes.
    public var changedMigrations: [Migration] {
        guard case .historyMismatch(let changed, _) = details else { return [] }
        return changed
    }

    /// Applied migrations the migrator does not know (``Code/historyMismatch``); empty for other codes.
    public var unknownMigrations: [AppliedMigration] {
        guard case .historyMismatch(_, let unknown) = details else { return [] }
        return unknown
    }

    /// The 1-based line of the file where the failed statement starts
    /// (``Code/statementFailed``); nil for other codes.
    public var line: Int? {
        guard case .statementFailed(_, let line, _, _) = details else { return nil }
        return line
    }

    /// The failed statement (``Code/statementFailed``); nil for other codes.
    public var statement: String? {
        guard case .statementFailed(_, _, let statement, _) = details else { return nil }
        return statement
    }

    /// SQLite's error for the failed statement (``Code/statementFailed``); nil for other codes.
    ///
    /// ```swift
    /// catch let error as MigrationError where error.sqliteError?.code == .constraintUnique { … }
    /// ```
    public var sqliteError: SQLiteError? {
        guard case .statementFailed(_, _, _, let error) = details else { return nil }
        return error
    }

    /// The tables left with foreign key violations (``Code/foreignKeyViolation``); empty for other codes.
    public var tables: [String] {
        guard case .foreignKeyViolation(_, let tables) = details else { return [] }
        return tables
    }

    /// An error of code ``Code/invalidFileName``.
    public static func invalidFileName(_ fileName: String) -> MigrationError {
        MigrationError(.invalidFileName(fileName))
    }

    /// An error of code ``Code/duplicateNumber``.
    public static func duplicateNumber(_ number: Int, fileNames: [String]) -> MigrationError {
        MigrationError(.duplicateNumber(number, fileNames: fileNames))
    }

    /// An error of code ``Code/gap``: `missing` numbers before the file `next`.
    public static func gap(missing: ClosedRange<Int>, next: String) -> MigrationError {
        MigrationError(.gap(missing: missing, next: next))
    }

    /// An error of code ``Code/unreadable``.
    public static func unreadable(path: String, reason: String) -> MigrationError {
        MigrationError(.unreadable(path: path, reason: reason))
    }

    /// An error of code ``Code/invalidEncoding``.
    public static func invalidEncoding(path: String) -> MigrationError {
        MigrationError(.invalidEncoding(path: path))
    }

    /// An error of code ``Code/noSuchMigration``.
    public static func noSuchMigration(_ number: Int) -> MigrationError {
        MigrationError(.noSuchMigration(number))
    }

    /// An error of code ``Code/historyMismatch``.
    public static func historyMismatch(changed: [Migration], unknown: [AppliedMigration]) -> MigrationError {
        MigrationError(.historyMismatch(changed: changed, unknown: unknown))
    }

    /// An error of code ``Code/statementFailed``.
    public static func statementFailed(fileName: String, line: Int, statement: String, error: SQLiteError)
        -> MigrationError
    {
        MigrationError(.statementFailed(fileName: fileName, line: line, statement: statement, error: error))
    }

    /// An error of code ``Code/foreignKeyViolation``.
    public static func foreignKeyViolation(fileName: String, tables: [String]) -> MigrationError {
        MigrationError(.foreignKeyViolation(fileName: fileName, tables: tables))
    }

    /// An error of code ``Code/invalidHistory``; `reason` says what is wrong with the record.
    public static func invalidHistory(_ reason: String) -> MigrationError {
        MigrationError(.invalidHistory(reason))
    }

    /// A one-paragraph explanation naming the files involved.
    ///
    /// ```swift
    /// "\(error)"   // "migration 0002_add_score_history.sql failed at line 12 and was rolled back: SQLite error 1 …"
    /// ```
    public var description: String {
        switch details {
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
