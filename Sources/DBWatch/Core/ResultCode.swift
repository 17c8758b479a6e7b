import CSQLite

/// A SQLite result code, primary (`SQLITE_CONSTRAINT`) or extended
/// (`SQLITE_CONSTRAINT_UNIQUE`).
///
/// Codes match errors in `catch` clauses. A primary code matches every
/// extended code of its family; an extended code matches only itself:
///
/// ```swift
/// do {
///     try db.execute(sql: "INSERT INTO team (name) VALUES ('Red')")
/// } catch ResultCode.constraintUnique {
///     // the name is taken
/// } catch ResultCode.constraint {
///     // any other constraint
/// }
/// ```
public struct ResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The raw SQLite code, for example `19` for `SQLITE_CONSTRAINT`.
    ///
    /// ```swift
    /// ResultCode.constraintUnique.rawValue   // 2067
    /// ```
    public let rawValue: Int32

    /// Creates a code from its raw SQLite value, for example `ResultCode(rawValue: 5)`.
    ///
    /// ```swift
    /// ResultCode(rawValue: 5) == .busy   // true
    /// ```
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The primary code of the family: `.constraintUnique.primary == .constraint`.
    ///
    /// ```swift
    /// ResultCode.constraintUnique.primary == .constraint   // true
    /// ```
    public var primary: ResultCode { ResultCode(rawValue: rawValue & 0xFF) }

    /// Whether this is a primary code (no extended bits), like `.busy`.
    ///
    /// ```swift
    /// ResultCode.busy.isPrimary   // true; ResultCode.constraintUnique.isPrimary is false
    /// ```
    public var isPrimary: Bool { rawValue & ~0xFF == 0 }

    /// SQLite's English text for the code, for example `"constraint failed"`.
    ///
    /// ```swift
    /// ResultCode.busy.description   // "database is locked"
    /// ```
    public var description: String {
        guard let text = sqlite3_errstr(rawValue) else { return "code \(rawValue)" }
        return String(cString: text)
    }

    /// Matches an error against a code: `catch ResultCode.busy { … }`.
    ///
    /// A primary pattern matches any ``SQLiteError`` of its family, an
    /// extended pattern only the same extended code.
    ///
    /// ```swift
    /// if ResultCode.constraint ~= error { … }   // any constraint failure, as in `catch ResultCode.constraint`
    /// ```
    public static func ~= (pattern: ResultCode, error: any Error) -> Bool {
        guard let error = error as? SQLiteError else { return false }
        return pattern.isPrimary ? error.code.primary == pattern : error.code == pattern
    }

    // Primary codes
    /// `SQLITE_OK`
    public static let ok = ResultCode(rawValue: SQLITE_OK)
    /// `SQLITE_ERROR`: generic error, including SQL syntax errors.
    public static let error = ResultCode(rawValue: SQLITE_ERROR)
    /// `SQLITE_INTERNAL`
    public static let `internal` = ResultCode(rawValue: SQLITE_INTERNAL)
    /// `SQLITE_PERM`
    public static let perm = ResultCode(rawValue: SQLITE_PERM)
    /// `SQLITE_ABORT`
    public static let abort = ResultCode(rawValue: SQLITE_ABORT)
    /// `SQLITE_BUSY`: another connection kept the database file locked beyond the busy timeout.
    public static let busy = ResultCode(rawValue: SQLITE_BUSY)
    /// `SQLITE_LOCKED`
    public static let locked = ResultCode(rawValue: SQLITE_LOCKED)
    /// `SQLITE_NOMEM`
    public static let noMemory = ResultCode(rawValue: SQLITE_NOMEM)
    /// `SQLITE_READONLY`: a write on a read-only connection.
    public static let readOnly = ResultCode(rawValue: SQLITE_READONLY)
    /// `SQLITE_INTERRUPT`: the statement was interrupted (also by ``UntrustedSQLPolicy/timeLimit``).
    public static let interrupt = ResultCode(rawValue: SQLITE_INTERRUPT)
    /// `SQLITE_IOERR`: a disk I/O error; matches every `.ioError…` code.
    public static let ioError = ResultCode(rawValue: SQLITE_IOERR)
    /// `SQLITE_CORRUPT`: the database file is malformed.
    public static let corrupt = ResultCode(rawValue: SQLITE_CORRUPT)
    /// `SQLITE_NOTFOUND`
    public static let notFound = ResultCode(rawValue: SQLITE_NOTFOUND)
    /// `SQLITE_FULL`: the disk is full; the write rolled back.
    public static let full = ResultCode(rawValue: SQLITE_FULL)
    /// `SQLITE_CANTOPEN`: the file cannot be opened.
    public static let cannotOpen = ResultCode(rawValue: SQLITE_CANTOPEN)
    /// `SQLITE_PROTOCOL`
    public static let `protocol` = ResultCode(rawValue: SQLITE_PROTOCOL)
    /// `SQLITE_SCHEMA`: the schema changed.
    public static let schema = ResultCode(rawValue: SQLITE_SCHEMA)
    /// `SQLITE_TOOBIG`: a string or blob is too large (also beyond an ``UntrustedSQLPolicy``'s limits).
    public static let tooBig = ResultCode(rawValue: SQLITE_TOOBIG)
    /// `SQLITE_CONSTRAINT`: a constraint failed; matches every `.constraint…` code.
    public static let constraint = ResultCode(rawValue: SQLITE_CONSTRAINT)
    /// `SQLITE_MISMATCH`: a data type mismatch (text into an `INTEGER PRIMARY KEY`).
    public static let mismatch = ResultCode(rawValue: SQLITE_MISMATCH)
    /// `SQLITE_MISUSE`: the library was used incorrectly (wrong arguments, closed database).
    public static let misuse = ResultCode(rawValue: SQLITE_MISUSE)
    /// `SQLITE_AUTH`: refused by the authorizer (SQL that an ``UntrustedSQLPolicy`` does not allow).
    public static let auth = ResultCode(rawValue: SQLITE_AUTH)
    /// `SQLITE_RANGE`: a parameter index out of range.
    public static let range = ResultCode(rawValue: SQLITE_RANGE)
    /// `SQLITE_NOTADB`: the file is not a database.
    public static let notADatabase = ResultCode(rawValue: SQLITE_NOTADB)

    // Extended codes
    /// `SQLITE_CONSTRAINT_UNIQUE`
    public static let constraintUnique = ResultCode(rawValue: 2067)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY` (SQLite's message reads "UNIQUE constraint failed").
    public static let constraintPrimaryKey = ResultCode(rawValue: 1555)
    /// `SQLITE_CONSTRAINT_NOTNULL`
    public static let constraintNotNull = ResultCode(rawValue: 1299)
    /// `SQLITE_CONSTRAINT_FOREIGNKEY`
    public static let constraintForeignKey = ResultCode(rawValue: 787)
    /// `SQLITE_CONSTRAINT_CHECK`
    public static let constraintCheck = ResultCode(rawValue: 275)
    /// `SQLITE_CONSTRAINT_TRIGGER`: a `RAISE(ABORT, …)` in a trigger.
    public static let constraintTrigger = ResultCode(rawValue: 1811)
    /// `SQLITE_READONLY_DBMOVED`: the file was moved or deleted while open.
    /// A `write` or `writeWithoutTransaction` of a queue or pool reports it
    /// as ``DatabaseFileReplacedError``; a statement inside them throws it.
    public static let readOnlyDatabaseMoved = ResultCode(rawValue: 1032)
    /// `SQLITE_IOERR_SHORT_READ`
    public static let ioErrorShortRead = ResultCode(rawValue: 522)
    /// `SQLITE_IOERR_READ`: the operating system failed a read; later reads may succeed.
    public static let ioErrorRead = ResultCode(rawValue: 266)
    /// `SQLITE_IOERR_WRITE`: the operating system failed a write (also a
    /// file that reached its size limit, `ulimit -f`).
    public static let ioErrorWrite = ResultCode(rawValue: 778)
    /// `SQLITE_IOERR_FSYNC`: the operating system failed to flush a file.
    public static let ioErrorFsync = ResultCode(rawValue: 1034)
    /// `SQLITE_IOERR_TRUNCATE`: the operating system failed to resize a file.
    public static let ioErrorTruncate = ResultCode(rawValue: 1546)

    /// Whether the code says that storing data failed: the disk is full
    /// (`SQLITE_FULL`) or the operating system failed a write, a flush or a
    /// resize. SQLite rolls back what the failing statement changed; what
    /// was committed before is intact.
    ///
    /// ```swift
    /// catch let error as SQLiteError where error.code.isWriteFailure {
    ///     logger.error("cannot store the import: \(error)")
    /// }
    /// ```
    public var isWriteFailure: Bool {
        if primary == .full { return true }
        guard primary == .ioError else { return false }
        // SQLITE_IOERR_WRITE, _FSYNC, _DIR_FSYNC, _TRUNCATE, _DELETE,
        // _SHMSIZE and the three _ATOMIC codes.
        return [3, 4, 5, 6, 10, 19, 29, 30, 31].contains(rawValue >> 8)
    }
}
