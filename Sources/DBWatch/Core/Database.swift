import CDBWatchVFS
import CSQLite
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// One SQLite connection.
///
/// You get a `Database` inside the closures of ``DatabaseQueue`` and
/// ``DatabasePool``, and use it only there: it is not `Sendable`, and it is
/// confined to the thread that runs the closure.
///
/// ```swift
/// let queue = try DatabaseQueue()
/// try await queue.write { db in
///     try db.execute(sql: "CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT, score INT)")
///     try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: ["Arthur", 100])
/// }
/// let names = try await queue.read { db in
///     try db.fetchAll(String.self, sql: "SELECT name FROM player")
/// }
/// ```
public final class Database {
    /// The `sqlite3*` handle; valid until ``close()``.
    private(set) var handle: OpaquePointer?
    /// The path given at open time (`:memory:` for an in-memory database).
    ///
    /// ```swift
    /// try await queue.read { db in db.path }   // ":memory:" for DatabaseQueue()
    /// ```
    public let path: String
    let configuration: Configuration
    /// Opened with `SQLITE_OPEN_READONLY`: writes are impossible already.
    let isReadOnlyConnection: Bool
    var logger: Logger { configuration.logger }

    private var statementCache: [String: Statement] = [:]

    // Every step reads a flag of each of these two. Some of their mutations
    // span calls (the authorizer's `record`, the untrusted statement cache),
    // so the compiler cannot prove that no access overlaps them and checks
    // every access at run time: two checks per row cost 6 to 10 % of the
    // decoding benchmark's rows per second.
    // No access overlaps them (SQLite's callbacks run inside prepare and
    // step, never inside a mutation of them): release builds skip the check,
    // debug builds, which run the tests, keep it.
    #if DEBUG
        /// What the authorizer learns of the statement being prepared (Tracking/Authorizer/StatementAuthorizer.swift).
        var authorizer = StatementAuthorizer()
        /// The untrusted-SQL policy in force and what enforces it (UntrustedSQL/UntrustedSQLEnforcement.swift).
        var untrustedSQL = UntrustedSQLEnforcement()
    #else
        /// What the authorizer learns of the statement being prepared (Tracking/Authorizer/StatementAuthorizer.swift).
        @exclusivity(unchecked) var authorizer = StatementAuthorizer()
        /// The untrusted-SQL policy in force and what enforces it (UntrustedSQL/UntrustedSQLEnforcement.swift).
        @exclusivity(unchecked) var untrustedSQL = UntrustedSQLEnforcement()
    #endif

    /// Collects the changes of write transactions when observations exist.
    var changeCollector: ChangeCollector?

    /// While it records, every statement run adds what it reads (Tracking/RegionRecorder.swift).
    var regionRecorder = RegionRecorder()

    /// The cancellation flag of the job running on this connection.
    var cancellation: CancellationFlag?
    /// Set when the connection's queue shuts down at the end of a close's
    /// grace period: statements then fail with "database is closed" (see
    /// ``JobQueue/waitForWorkersUnlessCalledFromOne(shuttingDownAt:)``).
    var shutdown: CancellationFlag?

    /// How many savepoints ``inSavepoint(_:)`` has open, for unique names.
    var savepointDepth = 0

    /// Set while the body of ``inTransaction(_:_:)`` (so of every `write`)
    /// or of a `read` runs: the library commits or rolls back that
    /// transaction, so `BEGIN`, `COMMIT` and `ROLLBACK` in SQL are refused.
    var ownsTransaction = false

    /// Whether an access runs on a caller's thread, and what its commits
    /// may do there (Access/CallerThreadAccess.swift).
    var callerThreadAccess = CallerThreadAccess()
    /// Whether the connection may wait for another connection's lock, and
    /// how long its step waited (Core/LockWaitState.swift).
    var lockWaits = LockWaitState()

    /// Opens a connection.
    ///
    /// - Parameters:
    ///   - path: a file path, or `:memory:` for a private in-memory database.
    ///   - configuration: the open options.
    ///   - readOnly: opens read-only even if the configuration does not say so
    ///     (pool readers).
    ///   - cancellation: the cancellation of the access the connection is
    ///     opened for: setting it ends the open's wait for a lock.
    ///   - shutdown: the shutdown flag of the queue that opens it: setting it
    ///     ends the open's wait for a lock too, with "database is closed".
    init(
        path: String, configuration: Configuration, readOnly: Bool = false, cancellation: CancellationFlag? = nil,
        shutdown: CancellationFlag? = nil
    ) throws {
        self.path = path
        self.configuration = configuration
        let readOnly = readOnly || configuration.readOnly
        self.isReadOnlyConnection = readOnly
        var flags = SQLITE_OPEN_NOMUTEX | 0x0200_0000  // SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var openPath = path
        if configuration.allowsURIFilenames {
            flags |= SQLITE_OPEN_URI
        } else if path.hasPrefix("file:") {
            // This SQLite is built with SQLITE_USE_URI: keep a plain path plain.
            openPath = "./" + path
        }
        // SQLite's open(2) of a FIFO waits for a writer, forever and past
        // any cancellation: a named pipe, or `/dev/fd/63` from a shell's `<(…)`.
        var status = stat()
        if stat(openPath, &status) == 0, status.st_mode & S_IFMT == S_IFIFO {
            throw SQLiteError(code: .notADatabase, message: "not a database file: it is a FIFO (\(path))")
        }
        var handle: OpaquePointer?
        // DBWatch's VFS forwards everything to the default one, and counts
        // the temporary files of untrusted SQL. A URI's `vfs=` overrides it.
        let code = sqlite3_open_v2(openPath, &handle, flags, dbwatch_vfs_name())
        guard code == SQLITE_OK, let handle else {
            let error = SQLiteError(connection: handle, code: code)
            sqlite3_close_v2(handle)
            throw SQLiteError(code: error.code, message: "\(error.message ?? "cannot open") (\(path))")
        }
        self.handle = handle
        sqlite3_extended_result_codes(handle, 1)
        installLockWaitHandler()
        installAuthorizer()
        installProgressChecks()
        self.cancellation = cancellation
        self.shutdown = shutdown
        defer { self.cancellation = nil }
        do {
            // Reads the header now, so that a file that is not a database
            // fails here with SQLITE_NOTADB rather than on first use.
            try execute(sql: "SELECT count(*) FROM sqlite_master")
            if !readOnly {
                try execute(
                    sql: configuration.foreignKeysEnabled ? "PRAGMA foreign_keys = ON" : "PRAGMA foreign_keys = OFF")
            } else if configuration.foreignKeysEnabled {
                try execute(sql: "PRAGMA foreign_keys = ON")
            }
        } catch var error as SQLiteError {
            // A wait for a lock that cancellation ended is a cancellation.
            let isCancelled = ResultCode.busy ~= error && waitIsCancelled
            close()
            if error.isDatabaseClosed { throw error }
            if isCancelled { throw CancellationError() }
            error.message = "\(error.message ?? "cannot open") (\(path))"
            throw error
        }
        logger.debug("opened connection", metadata: ["path": "\(path)", "readOnly": "\(readOnly)"])
    }

    deinit {
        close()
        dbwatch_temp_budget_release(untrustedSQL.temporaryStorageBudget)
    }

    /// Whether the connection is closed (its queue or pool was closed).
    ///
    /// ```swift
    /// try await queue.read { db in db.isClosed }   // false: an access's connection is open
    /// ```
    public var isClosed: Bool { handle == nil }

    /// Closes the connection. Later use throws ``ResultCode/misuse``.
    func close() {
        guard let handle else { return }
        statementCache.removeAll()
        untrustedSQL.statementCache.removeAll()
        // Uninstalling also drops the collector's reference to the last
        // statement: an unfinalized statement would keep the connection open.
        changeCollector?.uninstall(from: handle)
        if let shutdown, shutdown.isSet {
            // An interrupt that found no statement running stays pending
            // until the next statement starts, and would stop the checkpoint
            // that closing the last connection runs (the WAL file would stay).
            sqlite3_exec(handle, "SELECT 1", nil, nil, nil)
        }
        if !isReadOnlyConnection && mainFileHasMoved { emptyWALOfMovedFile(handle) }
        sqlite3_close_v2(handle)
        self.handle = nil
        logger.debug("closed connection", metadata: ["path": "\(path)"])
    }

    /// SQLite does not checkpoint at close a file that moved (deleted,
    /// renamed, or renamed over), and leaves its WAL file at the old name,
    /// where the next connection to open a file at that path would read its
    /// frames into that other database. Checkpointing first (into the file
    /// this connection has open, wherever it went) and truncating the WAL
    /// leaves nothing there to read. It does not wait for other connections'
    /// locks: a close never blocks on them.
    private func emptyWALOfMovedFile(_ handle: OpaquePointer) {
        lockWaits.isAllowed = false
        defer { lockWaits.isAllowed = true }
        let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
        if code != SQLITE_OK {
            logger.debug(
                "checkpoint of a moved file failed",
                metadata: ["error": "\(SQLiteError(connection: handle, code: code))"])
        }
    }

    func openHandle() throws -> OpaquePointer {
        guard let handle else { throw SQLiteError.databaseClosed }
        return handle
    }

    // MARK: - Preparing

    /// Returns the cached prepared statement for `sql`, preparing it on first use.
    ///
    /// `sql` must hold exactly one statement. The cache is emptied when a
    /// statement changes the schema. While a cursor holds the cached
    /// statement (from `fetchCursor` until its last row, or a `fetchAll`
    /// whose record's `init(row:)` runs the same SQL), a new statement that
    /// is not cached is returned instead: running the same SQL then would
    /// rebind or reset the rows being read.
    ///
    /// ```swift
    /// let statement = try db.cachedStatement(sql: "SELECT * FROM player WHERE id = ?")
    /// ```
    public func cachedStatement(sql: String) throws -> Statement {
        switch try cachedStatementUnlessScript(sql: sql) {
        case .statement(let statement):
            return statement
        case .noStatement:
            throw SQLiteError.misuse("the SQL holds no statement", sql: sql)
        case .severalStatements:
            throw SQLiteError.misuse("the SQL holds more than one statement; use execute(sql:) for scripts", sql: sql)
        }
    }

    /// What ``cachedStatementUnlessScript(sql:)`` found in the SQL.
    enum CachedSQL {
        /// The SQL's one statement, cached.
        case statement(Statement)
        /// Only whitespace and comments.
        case noStatement
        /// A script: its statements are run by `executeScript`.
        case severalStatements
    }

    /// The cached prepared statement for `sql` (see ``cachedStatement(sql:)``),
    /// unless `sql` holds no statement or several; throws the error of the
    /// prepare (of its first statement) or of the untrusted-SQL checks.
    @inline(__always)
    func cachedStatementUnlessScript(sql: String) throws -> CachedSQL {
        if untrustedSQL.isActive {
            if let statement = untrustedSQL.statementCache[sql], statement.isAvailable {
                untrustedSQL.deadline = nil
                return .statement(statement)
            }
        } else if let statement = statementCache[sql], statement.isAvailable {
            return .statement(statement)
        }
        let handle = try openHandle()
        try Database.refuseNULCharacter(in: sql)
        let (statement, tail) = try sql.withCString { cSQL in
            try prepare(cSQL, sql: sql, handle: handle, persistent: true)
        }
        guard let statement else { return .noStatement }
        if !tail.isEmpty { return .severalStatements }
        if untrustedSQL.isActive {
            try checkUntrusted(statement)
            if untrustedSQL.statementCache[sql] == nil { untrustedSQL.statementCache[sql] = statement }
            untrustedSQL.deadline = nil
        } else if statementCache[sql] == nil {
            statementCache[sql] = statement
        }
        return .statement(statement)
    }

    /// Prepares the first statement at `cSQL`. Returns it (nil for only
    /// whitespace or comments) and what follows it, trimmed of whitespace and
    /// comments.
    func prepare(_ cSQL: UnsafePointer<CChar>, sql: String?, handle: OpaquePointer, persistent: Bool) throws -> (
        Statement?, tail: String
    ) {
        var statementHandle: OpaquePointer?
        var tail: UnsafePointer<CChar>?
        authorizer.willPrepare()
        let code = sqlite3_prepare_v3(
            handle, cSQL, -1, persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0, &statementHandle, &tail)
        var footprint = authorizer.didPrepare()
        guard code == SQLITE_OK else {
            // The error is read before any other call on the connection (the
            // footprint's lookups below would replace it with their own).
            // SQLite's parser stops at an interrupt too.
            if code & 0xFF == SQLITE_INTERRUPT, let shutdown, shutdown.isSet { throw SQLiteError.databaseClosed }
            let text = sql ?? String(cString: cSQL)
            // A refused function comes back as SQLITE_ERROR ("not authorized
            // to use function"), other refusals as SQLITE_AUTH.
            if untrustedSQL.isActive, let refusal = authorizer.lastRefusal.take() {
                throw Database.untrustedRefusal(refusal, sql: text)
            }
            throw SQLiteError(connection: handle, code: code, sql: text)
        }
        resolveUnqualifiedReads(in: &footprint)
        widenGeneratedColumnReads(in: &footprint)
        var rest = ""
        if let tail, tail.pointee != 0 {
            rest = String(cString: tail)
            if Database.isBlank(rest) { rest = "" }
        }
        guard let statementHandle else { return (nil, rest) }
        let text = sql.flatMap { rest.isEmpty ? $0 : nil } ?? String(cString: sqlite3_sql(statementHandle))
        return (Statement(handle: statementHandle, database: self, sql: text, footprint: footprint), rest)
    }

    /// SQLite reads SQL up to its first NUL character: what follows would be
    /// dropped without a word (and a second statement after it never checked).
    static func refuseNULCharacter(in sql: String) throws {
        if sql.utf8.contains(0) {
            throw SQLiteError.misuse("the SQL holds a NUL character, where SQLite would stop reading it", sql: sql)
        }
    }

    /// Whether `sql` holds only whitespace and comments.
    static func isBlank(_ sql: String) -> Bool {
        var index = sql.utf8.startIndex
        let bytes = sql.utf8
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t")
                || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: ";")
            {
                index = bytes.index(after: index)
            } else if byte == UInt8(ascii: "-"), bytes.index(after: index) < bytes.endIndex,
                bytes[bytes.index(after: index)] == UInt8(ascii: "-")
            {
                while index < bytes.endIndex && bytes[index] != UInt8(ascii: "\n") { index = bytes.index(after: index) }
            } else if byte == UInt8(ascii: "/"), bytes.index(after: index) < bytes.endIndex,
                bytes[bytes.index(after: index)] == UInt8(ascii: "*")
            {
                guard let end = sql[index...].range(of: "*/") else { return true }
                index = end.upperBound
            } else {
                return false
            }
        }
        return true
    }

    /// Empties the statement cache (after a schema change).
    func clearStatementCache() {
        statementCache.removeAll(keepingCapacity: true)
        untrustedSQL.statementCache.removeAll()
    }

    // MARK: - Stepping

    /// Steps `statement` once. Returns `true` when a row is available.
    @inline(__always)
    func step(_ statement: Statement) throws -> Bool {
        if let cancellation, cancellation.isSet {
            abandon(statement)
            throw SQLiteError(code: .interrupt, message: "interrupted: the task was cancelled", sql: statement.sql)
        }
        if let shutdown, shutdown.isSet {
            abandon(statement)
            throw SQLiteError.databaseClosed
        }
        if ownsTransaction && statement.footprint.beginsOrEndsTransaction
            && sqlite3_stmt_isexplain(statement.handle) == 0
        {
            throw Database.transactionControlRefused(statement.sql)
        }
        if let changeCollector { changeCollector.statementWillStep(statement) }
        if untrustedSQL.isActive { try untrustedStatementWillStep(statement) }
        let code = sqlite3_step(statement.handle)
        if code == SQLITE_ROW {
            if authorizer.ranOutsidePrepare { statementWasReprepared(statement) }
            if untrustedSQL.isActive { try countUntrustedRow(statement) }
            return true
        }
        try finish(statement, code: code)
        return false
    }

    /// The statement finished (done or failed): resets it, keeps the change
    /// tracker informed and throws on failure.
    @inline(__always)
    func finish(_ statement: Statement, code: Int32) throws {
        let handle = self.handle
        // Read the error first: a reset, or the SQL that a re-prepare's
        // region needs, may overwrite it.
        var error = code == SQLITE_DONE ? nil : SQLiteError(connection: handle, code: code, sql: statement.sql)
        if authorizer.ranOutsidePrepare { statementWasReprepared(statement) }
        if let failure = error {
            if untrustedSQL.isActive { error = untrustedError(failure) }
            // The shutdown of a close interrupted the statement or ended its wait for a lock.
            if let shutdown, shutdown.isSet, ResultCode.interrupt ~= failure || ResultCode.busy ~= failure {
                error = SQLiteError.databaseClosed
            }
        }
        sqlite3_reset(statement.handle)
        if let changeCollector { changeCollector.statementDidFinish(statement, succeeded: error == nil, in: self) }
        if statement.footprint.changesSchema { clearStatementCache() }
        if let error { throw error }
    }

    /// Abandons a statement before its last row (a cursor dropped early).
    func abandon(_ statement: Statement) {
        let code = sqlite3_reset(statement.handle)
        if let changeCollector {
            changeCollector.statementDidFinish(statement, succeeded: code == SQLITE_OK, in: self)
        }
    }

    /// Steps `statement` until it is done, ignoring rows.
    func runToCompletion(_ statement: Statement) throws {
        while try step(statement) {}
    }

    // MARK: - Info

    /// The rowid of the last successful insert on this connection.
    ///
    /// ```swift
    /// try db.execute(sql: "INSERT INTO player (name) VALUES ('Arthur')")
    /// let id = db.lastInsertedRowID
    /// ```
    public var lastInsertedRowID: Int64 {
        handle.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    /// The number of rows changed by the last `INSERT`, `UPDATE` or `DELETE`.
    ///
    /// ```swift
    /// try db.execute(sql: "DELETE FROM player WHERE score < 10")
    /// let deleted = db.changesCount
    /// ```
    public var changesCount: Int {
        handle.map { Int(sqlite3_changes64($0)) } ?? 0
    }

    /// Whether a transaction is open on this connection.
    ///
    /// ```swift
    /// try await queue.write { db in db.isInsideTransaction }   // true
    /// ```
    public var isInsideTransaction: Bool {
        handle.map { sqlite3_get_autocommit($0) == 0 } ?? false
    }

    /// An `InterruptHandle` for cancelling from another thread.
    var interruptHandle: InterruptHandle? {
        handle.map(InterruptHandle.init)
    }
}

/// A connection handle that other threads may only pass to `sqlite3_interrupt`.
struct InterruptHandle: @unchecked Sendable {  // sqlite3_interrupt is documented safe from any thread
    let pointer: OpaquePointer

    func interrupt() {
        sqlite3_interrupt(pointer)
    }
}

@available(*, unavailable, message: "a connection is confined to the thread of its access closure")
extension Database: Sendable {}
