import CSQLite

/// What SQL you did not write (a user's query in a CLI or an admin page)
/// may do: read, nothing else, for a limited time.
///
/// Inside ``Database/withUntrustedSQL(_:_:)`` every statement must be a
/// read-only `SELECT`, `WITH`, `VALUES`, `EXPLAIN` or a read-only `PRAGMA`
/// (no value), and the authorizer refuses everything else while it is
/// prepared: writes, schema changes, `ATTACH`, `VACUUM INTO`, transaction
/// control, `load_extension()`, `fts3_tokenizer()`, FTS5's `highlight()`
/// and `snippet()` (unbounded in one call) and the like. A refusal
/// throws ``SQLiteError`` with code ``ResultCode/auth``; a query that runs
/// longer than ``timeLimit`` is stopped and throws ``ResultCode/interrupt``;
/// one whose values, result or temporary files outgrow
/// ``maximumValueLength``, ``maximumResultSize`` or
/// ``maximumTemporaryStorage`` throws ``ResultCode/tooBig``.
///
/// ```swift
/// let rows = try await pool.read { db in
///     try db.withUntrustedSQL(UntrustedSQLPolicy(timeLimit: .seconds(2))) {
///         try db.fetchAll(sql: userSQL)
///     }
/// }
/// ```
public struct UntrustedSQLPolicy: Sendable {
    /// How long one statement may run before it is stopped. Default 5 seconds.
    ///
    /// ```swift
    /// var policy = UntrustedSQLPolicy()
    /// policy.timeLimit = .milliseconds(500)   // a runaway query throws .interrupt after half a second
    /// ```
    public var timeLimit: Duration

    /// The largest string or blob, in bytes, that a statement may make or
    /// read (SQLite's `SQLITE_LIMIT_LENGTH`); beyond it the statement throws
    /// ``ResultCode/tooBig``. Default 1 MB; `nil` keeps the connection's
    /// own limit (about 1 GB).
    ///
    /// The time limit is checked every 100 steps of the virtual machine,
    /// not inside one function call, so this limit is what bounds one step:
    /// at 1 MB the costliest calls (`randomblob`, a copy, a `LIKE` against
    /// a pattern of 100 bytes, the most SQLite allows under a policy) take
    /// milliseconds to about 0.3 s. Calls whose time grows with the product
    /// of their arguments' sizes (`instr`, `replace`, `trim`) or with a
    /// width (`printf('%.*c', …)`) are refused beyond a bound, with
    /// ``ResultCode/tooBig``. A larger limit makes each of these steps
    /// longer in proportion: the time limit and cancellation then hold
    /// less tightly.
    ///
    /// ```swift
    /// var policy = UntrustedSQLPolicy()
    /// policy.maximumValueLength = 10_000_000   // values up to 10 MB
    /// ```
    public var maximumValueLength: Int?

    /// The largest result, in bytes, that one statement may return: the
    /// sum over all its rows of the sizes of their values (8 bytes each,
    /// `NULL` included, plus the bytes of text and blobs). Beyond it the statement
    /// is stopped and throws ``SQLiteError`` with code ``ResultCode/tooBig``
    /// ("the result is larger than …"). Default 100 MB, 100 values at the
    /// largest length, and about what a process can hold and print
    /// without trouble (the rows' memory is about this plus some 50 bytes
    /// per value); `nil` for no limit.
    ///
    /// ```swift
    /// var policy = UntrustedSQLPolicy()
    /// policy.maximumResultSize = 10_000_000   // results up to 10 MB
    /// ```
    public var maximumResultSize: Int?

    /// The most bytes that the temporary files of the statements running
    /// under the policy may hold together: the sorter of a large `ORDER BY`
    /// or `GROUP BY`, the tables of `DISTINCT`, `UNION` or a materialized
    /// view, which SQLite spills to files (whatever `temp_store` says) once
    /// they outgrow its page cache. A write beyond it fails, and the
    /// statement throws ``SQLiteError`` with code ``ResultCode/tooBig``
    /// ("the query's temporary files are larger than the limit of … bytes");
    /// the files are deleted when the statement ends. Default 256 MB:
    /// enough to sort a result of the default maximum result size, with
    /// the merges of its sorted runs, and a tenth of what the default time
    /// limit let a sort write (1.6 GB in 5 s); `nil` for no limit.
    ///
    /// Counted by DBWatch's VFS, which every connection uses unless a URI
    /// filename names another one (`?vfs=`): then only the time limit
    /// bounds these files.
    ///
    /// ```swift
    /// var policy = UntrustedSQLPolicy()
    /// policy.maximumTemporaryStorage = 10_000_000   // sorts of up to about 10 MB
    /// ```
    public var maximumTemporaryStorage: Int?

    /// Creates a policy: `UntrustedSQLPolicy(timeLimit: .seconds(2))`.
    ///
    /// ```swift
    /// let policy = UntrustedSQLPolicy(timeLimit: .seconds(2), maximumValueLength: nil)   // SQLite's own limit
    /// ```
    public init(
        timeLimit: Duration = .seconds(5), maximumValueLength: Int? = 1_000_000, maximumResultSize: Int? = 100_000_000,
        maximumTemporaryStorage: Int? = 256_000_000
    ) {
        self.timeLimit = timeLimit
        self.maximumValueLength = maximumValueLength
        self.maximumResultSize = maximumResultSize
        self.maximumTemporaryStorage = maximumTemporaryStorage
    }

    /// The longest `LIKE` or `GLOB` pattern, in bytes, under a policy
    /// (SQLite's `SQLITE_LIMIT_LIKE_PATTERN_LENGTH`, 50000 by default): a
    /// match takes time in proportion to the text's size times the
    /// pattern's, about 0.3 s for 1 MB against 100 bytes.
    static let maximumPatternLength: Int32 = 100

    /// How many steps of the virtual machine run between two checks of the time limit.
    static let stepsBetweenChecks: Int32 = 100

    /// Pragmas that only read, allowed without a value.
    static let readOnlyPragmas: Set<String> = [
        "application_id", "collation_list", "compile_options", "data_version", "database_list", "encoding",
        "foreign_key_check", "foreign_key_list", "foreign_keys", "freelist_count", "function_list", "index_info",
        "index_list", "index_xinfo", "integrity_check", "journal_mode", "module_list", "page_count", "page_size",
        "pragma_list", "quick_check", "schema_version", "table_info", "table_list", "table_xinfo", "user_version",
    ]

    /// Read-only pragmas whose read form (no value) SQLite does not mark
    /// read-only (`sqlite3_stmt_readonly` is false): the virtual machine
    /// instruction that reads the journal mode is the one that sets it.
    /// The authorizer has already refused their setting forms.
    static let readsNotMarkedReadOnly: Set<String> = ["journal_mode"]

    /// Pragmas whose argument names what to read (`table_info(player)`), not a value to set.
    static let pragmasWithArgument: Set<String> = [
        "foreign_key_check", "foreign_key_list", "index_info", "index_list", "index_xinfo", "integrity_check",
        "quick_check", "table_info", "table_list", "table_xinfo",
    ]

    /// Functions that leak memory addresses, touch files or load code.
    /// Also FTS5's `highlight()` and `snippet()`, whose one call copies
    /// its whole output again at each piece it adds: on a large document it
    /// runs for minutes in one step, out of reach of the time limit (FTS3's
    /// `snippet()`, which has the same name, is refused with it).
    static let refusedFunctions: Set<String> = [
        "load_extension", "fts3_tokenizer", "readfile", "writefile", "edit", "fts5", "sqlite_dbpage",
        "highlight", "snippet",
    ]

    /// Whether `table` is `sqlite_master` (or `sqlite_temp_master`), as the authorizer names it.
    static func isSchemaTable(_ table: String?) -> Bool {
        table == "sqlite_master" || table == "sqlite_temp_master"
    }

    /// Whether the authorizer allows `action`; otherwise the words for the refusal.
    static func refusal(action: Int32, first: String?, second: String?) -> String? {
        switch action {
        case SQLITE_SELECT, SQLITE_READ, SQLITE_RECURSIVE:
            return nil
        case SQLITE_FUNCTION:
            let name = (second ?? "").lowercased()
            return refusedFunctions.contains(name) ? "the function \(name)()" : nil
        case SQLITE_PRAGMA:
            let name = (first ?? "").lowercased()
            if second != nil && !pragmasWithArgument.contains(name) { return "changing PRAGMA \(name)" }
            return readOnlyPragmas.contains(name) ? nil : "PRAGMA \(name)"
        case SQLITE_UPDATE where isSchemaTable(first):
            // Asked when a statement first uses a virtual table (FTS5,
            // `json_each`, `pragma_table_info`) on a connection; nothing is
            // written. Real writes to the schema table need a PRAGMA, which
            // is refused, and fail the statement's read-only check anyway.
            return nil
        case SQLITE_INSERT, SQLITE_UPDATE, SQLITE_DELETE:
            return "writing to \(first ?? "a table")"
        case SQLITE_TRANSACTION, SQLITE_SAVEPOINT:
            return "transaction control (\(first ?? "BEGIN"))"
        case SQLITE_ATTACH:
            return "ATTACH"
        case SQLITE_DETACH:
            return "DETACH"
        case SQLITE_ANALYZE:
            return "ANALYZE"
        default:
            return "schema changes"
        }
    }
}
