import CSQLite

/// An error reported by SQLite, or by DBWatch for a misuse of the database
/// (a wrong argument count, a closed database).
///
/// It carries the extended result code, SQLite's message and the SQL that
/// failed. Bound values never appear in `description`, so logging an error
/// does not leak user data.
///
/// Two errors are equal when all of these are: to branch on a kind of
/// failure, match its code (`catch ResultCode.busy`) or ask
/// ``isDatabaseClosed``, ``isBusyOrLocked``, ``isConstraintViolation`` or
/// ``isDiskFull``.
///
/// ```swift
/// do {
///     try db.execute(sql: "INSERT INTO player (id, name) VALUES (?, ?)", arguments: [1, "Arthur"])
/// } catch let error as SQLiteError where error.code == .constraintPrimaryKey {
///     logger.warning("\(error.message ?? "")")  // "UNIQUE constraint failed: player.id"
/// }
/// ```
public struct SQLiteError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The extended result code (`.constraintUnique`), or a primary code when
    /// SQLite gave no extended one.
    ///
    /// ```swift
    /// catch let error as SQLiteError where error.code == .constraintNotNull { … }
    /// ```
    public var code: ResultCode
    /// SQLite's message, for example `"no such table: player"`.
    ///
    /// ```swift
    /// error.message   // "no such table: player" before the migration that creates it
    /// ```
    public var message: String?
    /// The SQL being prepared or run when the error happened, if any.
    ///
    /// ```swift
    /// error.sql   // "SELECT * FROM player WHERE id = ?": the statement, never its bound values
    /// ```
    public var sql: String?
    /// The byte offset in `sql` of the token that caused the error, when
    /// SQLite reports one (a syntax error, an unknown column).
    ///
    /// ```swift
    /// // "no such column: scor" in "SELECT * FROM player WHERE scor > 1":
    /// error.offset   // 27, where `scor` starts
    /// ```
    public var offset: Int?

    /// The primary result code (`.constraint` for `.constraintUnique`).
    ///
    /// ```swift
    /// catch let error as SQLiteError where error.primaryCode == .constraint { … }   // any constraint
    /// ```
    public var primaryCode: ResultCode { code.primary }

    /// Creates an error, for example `SQLiteError(code: .misuse, message: "database is closed")`.
    ///
    /// ```swift
    /// throw SQLiteError(code: .busy, message: "database is locked")   // a test double's failure
    /// ```
    public init(code: ResultCode, message: String? = nil, sql: String? = nil, offset: Int? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
        self.offset = offset
    }

    /// `SQLite error 1555 (constraint failed): UNIQUE constraint failed: player.id - while executing `INSERT …``
    ///
    /// ```swift
    /// "\(error)"   // SQLite error 1 (SQL logic error): no such table: playr - while executing `SELECT * FROM playr`
    /// ```
    public var description: String {
        var text = "SQLite error \(code.rawValue) (\(code))"
        if let message { text += ": \(message)" }
        if let sql { text += " - while executing `\(sql)`" }
        if let offset { text += " at offset \(offset)" }
        return text
    }

    /// Reads the error of the last failing call on `handle`.
    init(connection handle: OpaquePointer?, code: Int32, sql: String? = nil) {
        let extended = handle.map { sqlite3_extended_errcode($0) } ?? code
        // Prefer the extended code when it belongs to the same family as `code`.
        let resolved = (extended & 0xFF) == (code & 0xFF) ? extended : code
        let message = handle.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        let offset = handle.map { sqlite3_error_offset($0) } ?? -1
        self.init(
            code: ResultCode(rawValue: resolved), message: message, sql: sql, offset: offset >= 0 ? Int(offset) : nil)
    }

    static func misuse(_ message: String, sql: String? = nil) -> SQLiteError {
        SQLiteError(code: .misuse, message: message, sql: sql)
    }

    static let databaseClosed = SQLiteError(code: .misuse, message: "database is closed")

    /// Whether this is the error of a closed database (``ResultCode/misuse``,
    /// "database is closed"): an access after `close()`, work that the
    /// close stopped, or the last element of an observation of a database
    /// that closed.
    ///
    /// ```swift
    /// catch let error as SQLiteError where error.isDatabaseClosed { … }   // shutting down: 503
    /// ```
    public var isDatabaseClosed: Bool { code == .misuse && message == SQLiteError.databaseClosed.message }

    /// Whether another connection or process held a lock for longer than
    /// ``Configuration/busyTimeout`` (``ResultCode/busy``), or a table was
    /// locked (``ResultCode/locked``), with any of their extended codes: a
    /// temporary failure that is worth a retry later. (A wait for a lock
    /// that cancelling the task ended throws `CancellationError` instead.)
    ///
    /// ```swift
    /// catch let error as SQLiteError where error.isBusyOrLocked { … }   // retry later: 503, Retry-After
    /// ```
    public var isBusyOrLocked: Bool { primaryCode == .busy || primaryCode == .locked }

    /// Whether a constraint failed (``ResultCode/constraint`` and its
    /// extended codes: unique, primary key, not null, foreign key, check):
    /// the write conflicts with the data, and retrying it unchanged fails again.
    ///
    /// ```swift
    /// catch let error as SQLiteError where error.isConstraintViolation { … }   // 409
    /// ```
    public var isConstraintViolation: Bool { primaryCode == .constraint }

    /// Whether the disk (or the database's size limit) is full
    /// (``ResultCode/full``): the write was rolled back, data committed
    /// before is intact, and writes work again once there is space.
    ///
    /// ```swift
    /// catch let error as SQLiteError where error.isDiskFull { … }   // 507
    /// ```
    public var isDiskFull: Bool { primaryCode == .full }
}
