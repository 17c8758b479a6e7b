import Foundation
import Logging
import Synchronization

/// Applies schema migrations in order, each exactly once and all-or-nothing,
/// and refuses a database whose history does not match them.
///
/// Migrations come from a directory of `NNNN_description.sql` files or from
/// a list in code. Applied migrations are recorded, with the SHA-256 of
/// their SQL, in the table `dbwatch_migrations` of the database.
///
/// ```swift
/// let migrator = try Migrator(directory: "Migrations")
/// let queue = try DatabaseQueue(path: "/var/lib/app/db.sqlite")
/// let applied = try await migrator.migrate(queue)
/// logger.info("applied \(applied.map(\.fileName))")  // ["0001_create_team_and_player.sql", …]
/// ```
///
/// Each migration runs in its own `BEGIN IMMEDIATE` transaction that
/// re-reads the records, runs the statements one by one, checks foreign keys
/// (`PRAGMA foreign_key_check`) and records the migration. As in the stock
/// `sqlite3` shell, foreign-key enforcement is off while the statements run,
/// so rebuilding a table (create, copy, drop, rename) does not cascade into
/// the tables that reference it; `PRAGMA foreign_keys` is restored
/// afterwards. A failure rolls that migration back and throws a
/// ``MigrationError``; earlier migrations stay applied. Migrators on several
/// connections or processes may run at once: the write lock serializes
/// them, and each migration is applied once.
public struct Migrator: Sendable {
    /// The migrations, sorted by number: 1, 2, 3, … without gaps.
    ///
    /// ```swift
    /// try Migrator(directory: "Migrations").migrations.map(\.fileName)   // ["0001_create_team_and_player.sql", …]
    /// ```
    public let migrations: [Migration]

    /// The table where applied migrations are recorded.
    static let recordTable = "dbwatch_migrations"

    /// A migrator over migrations carried in code.
    ///
    /// ```swift
    /// let migrator = try Migrator(migrations: [
    ///     Migration(number: 1, name: "create_player", sql: "CREATE TABLE player (id INTEGER PRIMARY KEY);"),
    ///     Migration(number: 2, name: "add_player_score", sql: "ALTER TABLE player ADD COLUMN score INTEGER;"),
    /// ])
    /// ```
    ///
    /// - Parameter migrations: the migrations, in any order.
    /// - Throws: ``MigrationError/invalidFileName(_:)`` for a number below 1
    ///   or a name other than letters, digits, `_` and `-`;
    ///   ``MigrationError/duplicateNumber(_:fileNames:)``;
    ///   ``MigrationError/gap(missing:next:)`` unless the numbers are 1, 2, 3, ….
    public init(migrations: [Migration]) throws {
        for migration in migrations {
            guard let parsed = Migration.parseFileName(migration.fileName), parsed.number == migration.number,
                parsed.name == migration.name
            else { throw MigrationError.invalidFileName(migration.fileName) }
        }
        let sorted = migrations.sorted { ($0.number, $0.fileName) < ($1.number, $1.fileName) }
        var expected = 1
        for (index, migration) in sorted.enumerated() {
            if index > 0 && sorted[index - 1].number == migration.number {
                throw MigrationError.duplicateNumber(
                    migration.number, fileNames: sorted.filter { $0.number == migration.number }.map(\.fileName))
            }
            if migration.number != expected {
                throw MigrationError.gap(missing: expected...(migration.number - 1), next: migration.fileName)
            }
            expected += 1
        }
        self.migrations = sorted
    }

    /// A migrator over the `.sql` files of a directory.
    ///
    /// Every file whose name ends in `.sql` must be named
    /// `NNNN_description.sql`: four or more digits (a number from 1), `_`,
    /// and a description of letters, digits, `_` and `-`, for example
    /// `0001_create_team_and_player.sql`. Numbers run 1, 2, 3, … without
    /// gaps. Hidden files, subdirectories and files with other extensions
    /// (`README.md`) are ignored. A file must be UTF-8; its checksum is the
    /// SHA-256 of its bytes.
    ///
    /// ```swift
    /// let migrator = try Migrator(directory: "/opt/app/Migrations")
    /// ```
    ///
    /// - Parameter directory: the directory path.
    /// - Throws: ``MigrationError/unreadable(path:reason:)``,
    ///   ``MigrationError/invalidEncoding(path:)``,
    ///   ``MigrationError/invalidFileName(_:)``,
    ///   ``MigrationError/duplicateNumber(_:fileNames:)`` or
    ///   ``MigrationError/gap(missing:next:)``.
    public init(directory: String) throws {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MigrationError.unreadable(path: directory, reason: "no such directory")
        }
        // POSIX calls rather than Foundation's, whose errors read as
        // NSError dumps: the reason is the system's words ("Permission denied").
        guard let listing = opendir(directory) else {
            throw MigrationError.unreadable(path: directory, reason: String(cString: strerror(errno)))
        }
        closedir(listing)
        let names = (try? manager.contentsOfDirectory(atPath: directory)) ?? []
        var migrations: [Migration] = []
        for fileName in names.sorted() where !fileName.hasPrefix(".") && fileName.lowercased().hasSuffix(".sql") {
            let path = (directory as NSString).appendingPathComponent(fileName)
            var isSubdirectory: ObjCBool = false
            if manager.fileExists(atPath: path, isDirectory: &isSubdirectory), isSubdirectory.boolValue { continue }
            guard let (number, name) = Migration.parseFileName(fileName) else {
                throw MigrationError.invalidFileName(fileName)
            }
            let data = try Self.contents(of: path)
            guard let sql = String(validating: data, as: UTF8.self) else {
                throw MigrationError.invalidEncoding(path: path)
            }
            migrations.append(Migration(number: number, name: name, sql: sql, fileName: fileName))
        }
        try self.init(migrations: migrations)
    }

    /// The bytes of the file at `path`, or ``MigrationError/unreadable(path:reason:)``
    /// with the system's reason. Only a regular file (or a link to one) is
    /// read: a FIFO would block the open forever, and a device such as
    /// `/dev/zero` never ends.
    private static func contents(of path: String) throws -> [UInt8] {
        // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw MigrationError.unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw MigrationError.unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw MigrationError.unreadable(path: path, reason: "not a regular file")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                if errno == EINTR { continue }
                throw MigrationError.unreadable(path: path, reason: String(cString: strerror(errno)))
            }
            bytes += buffer[..<count]
        }
    }

    /// Which migrations are applied, pending, changed since they were
    /// applied, or applied but unknown to this migrator. Reads only.
    ///
    /// ```swift
    /// let status = try await migrator.status(of: queue)
    /// logger.info("\(status.applied.count) applied, \(status.pending.count) pending")
    /// ```
    ///
    /// - Parameter writer: the database.
    /// - Throws: ``SQLiteError`` when the database cannot be read.
    public func status(of writer: some DatabaseWriter) async throws -> MigrationStatus {
        let records = try await writer.read { db in try Migrator.records(in: db) }
        return MigrationStatus(migrations: migrations, records: records)
    }

    /// The migrations ``migrate(_:upTo:checksIntegrity:)`` would apply now, without changing
    /// the database; throws where it would refuse to start.
    ///
    /// ```swift
    /// for migration in try await migrator.dryRun(queue) {
    ///     logger.info("would apply \(migration.fileName)")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - writer: the database.
    ///   - target: the number of the last migration to apply; `nil` for all.
    /// - Throws: ``MigrationError/noSuchMigration(_:)`` for an unknown
    ///   `target`; ``MigrationError/historyMismatch(changed:unknown:)`` when
    ///   the history does not match; ``SQLiteError`` when reading fails.
    public func dryRun(_ writer: some DatabaseWriter, upTo target: Int? = nil) async throws -> [Migration] {
        if let target, !migrations.contains(where: { $0.number == target }) {
            throw MigrationError.noSuchMigration(target)
        }
        let status = try await status(of: writer)
        try status.checkHistory()
        return status.pending.filter { $0.number <= target ?? .max }
    }

    /// Applies the pending migrations in order, up to `target`, and returns
    /// those this call applied.
    ///
    /// Each migration runs in one `BEGIN IMMEDIATE` transaction that first
    /// re-reads the records (another connection or process may have applied
    /// it meanwhile: then it is skipped, and not returned), runs the
    /// statements one by one with foreign-key enforcement off, checks
    /// foreign keys with `PRAGMA foreign_key_check` and records the
    /// migration; `PRAGMA foreign_keys` is then set back to what it was.
    /// A failure rolls that migration back completely and throws; migrations
    /// applied before it stay applied. Running again when nothing is pending
    /// writes nothing. A `target` below the last applied migration applies
    /// nothing (there are no down migrations).
    ///
    /// ```swift
    /// try await migrator.migrate(queue, upTo: 2)   // applies 0001 and 0002
    /// try await migrator.migrate(queue)            // applies the rest
    /// try await migrator.migrate(queue)            // returns []
    /// ```
    ///
    /// - Parameters:
    ///   - writer: the database.
    ///   - target: the number of the last migration to apply; `nil` for all.
    ///   - checksIntegrity: whether to run ``checkIntegrity(of:)`` first
    ///     (when something is pending); `false` when the caller just did.
    /// - Returns: the migrations applied by this call, in order.
    /// - Throws: ``MigrationError/historyMismatch(changed:unknown:)`` (nothing
    ///   applied), ``MigrationError/statementFailed(fileName:line:statement:error:)``,
    ///   ``MigrationError/foreignKeyViolation(fileName:tables:)``,
    ///   ``MigrationError/noSuchMigration(_:)``; ``SQLiteError`` when the
    ///   write lock stays busy beyond the busy timeout, or with code
    ///   ``ResultCode/corrupt`` when `PRAGMA quick_check` finds the database
    ///   damaged (checked once before the first pending migration, nothing
    ///   applied); `CancellationError`.
    @discardableResult
    public func migrate(_ writer: some DatabaseWriter, upTo target: Int? = nil, checksIntegrity: Bool = true)
        async throws -> [Migration]
    {
        let plan = try await dryRun(writer, upTo: target)
        if checksIntegrity && !plan.isEmpty { try await checkIntegrity(of: writer) }
        return try await apply(plan, to: writer)
    }

    /// Throws ``SQLiteError`` with code ``ResultCode/corrupt`` when
    /// `PRAGMA quick_check` finds the database damaged. ``migrate(_:upTo:checksIntegrity:)``
    /// calls it before the first pending migration: SQLite notices damage
    /// only in the pages a statement touches, and a migration that writes
    /// around it can make it worse. It reads the whole file once (0.2 s for
    /// 214 MB here). Rows that break a `CHECK` or `NOT NULL` constraint
    /// (written with `PRAGMA ignore_check_constraints`, or before the
    /// constraint existed) are data, not damage: a migration may be the fix.
    ///
    /// ```swift
    /// try await migrator.checkIntegrity(of: pool)
    /// for migration in try await migrator.dryRun(pool) {
    ///     try await migrator.migrate(pool, upTo: migration.number, checksIntegrity: false)
    /// }
    /// ```
    public func checkIntegrity(of writer: some DatabaseWriter) async throws {
        try await writer.read { db in try Migrator.checkIntegrity(of: db) }
    }

    /// Applies `plan` (from ``dryRun(_:upTo:)``), each migration in its own
    /// transaction that skips it if it is applied by then.
    func apply(_ plan: [Migration], to writer: some DatabaseWriter) async throws -> [Migration] {
        var applied: [Migration] = []
        let migrations = self.migrations
        for migration in plan {
            try Task.checkCancellation()
            // Cancelling the task interrupts the running statement, and the
            // connection refuses to start another one: the migration rolls back.
            let didApply = try await writer.writeWithoutTransaction { db in
                try Migrator.apply(migration, knowing: migrations, in: db)
            }
            if didApply { applied.append(migration) }
        }
        return applied
    }

    /// See ``checkIntegrity(of:)``.
    static func checkIntegrity(of db: Database) throws {
        let findings: [String]
        do {
            findings = try db.fetchAll(String.self, sql: "PRAGMA quick_check(100)")
        } catch let error as SQLiteError where [.corrupt, .notADatabase].contains(error.code.primary) {
            // The check itself ran into the damage.
            findings = [error.message ?? "\(error.code)"]
        }
        let problems = findings.filter { finding in
            finding != "ok" && !finding.hasPrefix("CHECK constraint failed in ")
                && !finding.hasPrefix("NULL value in ")
        }
        guard !problems.isEmpty else { return }
        throw SQLiteError(
            code: .corrupt,
            message: "the database is damaged, nothing was applied (PRAGMA quick_check: "
                + problems.prefix(3).joined(separator: "; ") + ")")
    }

    /// Applies `migration` on `db`, which must be outside a transaction, the
    /// way the SQLite documentation's table-rebuilding procedure expects:
    /// with foreign-key enforcement off, in one `BEGIN IMMEDIATE`
    /// transaction that ends with `PRAGMA foreign_key_check`, then with
    /// `PRAGMA foreign_keys` back to what it was. Returns `false` when the
    /// migration is already applied.
    private static func apply(
        _ migration: Migration, knowing migrations: [Migration], in db: Database
    ) throws -> Bool {
        guard !db.isInsideTransaction else {
            throw SQLiteError(code: .misuse, message: "a migration cannot run inside an open transaction")
        }
        // `PRAGMA foreign_keys` is a no-op inside a transaction: switch it
        // before BEGIN, and back after COMMIT or ROLLBACK.
        let foreignKeysWereOn = try db.fetchOne(Bool.self, sql: "PRAGMA foreign_keys") ?? false
        if foreignKeysWereOn {
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
        }
        defer {
            if foreignKeysWereOn { restoreForeignKeys(in: db) }
        }
        return try db.inTransaction(.immediate) {
            try applyInTransaction(migration, knowing: migrations, in: db)
        }
    }

    /// Turns foreign-key enforcement back on after a migration; never throws.
    ///
    /// A cancellation can interrupt the `PRAGMA` itself: SQLite clears the
    /// interruption when the next statement starts, so a second attempt
    /// succeeds. A transaction a failed `ROLLBACK` left open would make the
    /// `PRAGMA` a no-op, so it is rolled back first.
    private static func restoreForeignKeys(in db: Database) {
        db.withoutCancellation { restoreForeignKeysAfterCancellation(in: db) }
    }

    private static func restoreForeignKeysAfterCancellation(in db: Database) {
        for attempt in 1...3 {
            db.rollbackIfNeeded()
            do {
                try db.execute(sql: "PRAGMA foreign_keys = ON")
                if try db.fetchOne(Bool.self, sql: "PRAGMA foreign_keys") == true { return }
            } catch {
                db.logger.debug(
                    "restoring foreign keys failed", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
            }
        }
        db.logger.debug("foreign keys could not be turned back on after a migration")
    }

    /// Applies `migration` inside the open transaction of `db`, after
    /// checking the records against `migrations`. Returns `false` when the
    /// migration is already applied.
    private static func applyInTransaction(
        _ migration: Migration, knowing migrations: [Migration], in db: Database
    ) throws -> Bool {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS \(recordTable) (
                    number INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    checksum TEXT NOT NULL,
                    applied_at TEXT NOT NULL
                )
                """)
        let records = try Migrator.records(in: db)
        try MigrationStatus(migrations: migrations, records: records).checkHistory()
        if records.contains(where: { $0.number == migration.number }) {
            db.logger.debug("migration already applied", metadata: ["migration": "\(migration.fileName)"])
            return false
        }
        for statement in SQLScript(migration.sql).statements {
            try run(statement, of: migration, in: db)
        }
        // Enforcement is off: this check is what catches every violation,
        // immediate or deferred, before the commit.
        let violations = try db.fetchAll(sql: "PRAGMA foreign_key_check")
        if !violations.isEmpty {
            let tables = try Set(violations.map { try $0.decode(String.self, at: 0) }).sorted()
            throw MigrationError.foreignKeyViolation(fileName: migration.fileName, tables: tables)
        }
        try db.execute(
            sql: """
                INSERT INTO \(recordTable) (number, name, checksum, applied_at)
                VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
                """,
            arguments: [migration.number, migration.name, migration.checksum])
        db.logger.debug("applied migration", metadata: ["migration": "\(migration.fileName)"])
        return true
    }

    /// Runs one statement of a migration, turning a failure into
    /// ``MigrationError/statementFailed(fileName:line:statement:error:)``.
    private static func run(_ statement: SQLScript.Statement, of migration: Migration, in db: Database) throws {
        func failure(_ error: SQLiteError) -> MigrationError {
            .statementFailed(fileName: migration.fileName, line: statement.line, statement: statement.sql, error: error)
        }
        if statement.isTransactionControl {
            throw failure(
                SQLiteError(
                    code: .misuse,
                    message: "a migration runs in its own transaction: remove BEGIN, COMMIT, END and ROLLBACK",
                    sql: statement.sql))
        }
        do {
            try db.execute(sql: statement.sql)
        } catch let error as SQLiteError where error.code.primary != .interrupt && !error.isDatabaseClosed {
            throw failure(error)
        }
        // Transaction control is refused above; this guards the guarantee anyway.
        guard db.isInsideTransaction else {
            throw failure(
                SQLiteError(
                    code: .misuse, message: "the statement ended the migration's transaction", sql: statement.sql))
        }
    }

    /// The records of applied migrations, by number; none when the table
    /// does not exist yet.
    static func records(in db: Database) throws -> [AppliedMigration] {
        let tableCount = try db.fetchOne(
            Int.self,
            sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND lower(name) = '\(recordTable)'")
        guard let tableCount, tableCount > 0 else { return [] }
        return try db.fetchAll(sql: "SELECT number, name, checksum, applied_at FROM \(recordTable) ORDER BY number")
            .map { row in
                func field<T: DatabaseValueConvertible>(_ type: T.Type, _ index: Int, _ what: String) throws -> T {
                    guard let value = T.fromDatabaseValue(row[index]) else {
                        throw MigrationError.invalidHistory("\(what) \(row[index]) in \(row)")
                    }
                    return value
                }
                return AppliedMigration(
                    number: try field(Int.self, 0, "the number"), name: try field(String.self, 1, "the name"),
                    checksum: try field(String.self, 2, "the checksum"),
                    appliedAt: try field(String.self, 3, "the time"))
            }
    }
}
