import CSQLite

/// A prepared SQLite statement, owned by one ``Database``.
///
/// Statements come from the connection's cache; users rarely touch them
/// directly. They are not `Sendable`: use them only inside the access closure
/// that produced them.
///
/// ```swift
/// try await queue.write { db in
///     let statement = try db.cachedStatement(sql: "INSERT INTO player (name) VALUES (?)")
///     for name in ["Arthur", "Barbara"] {
///         try statement.execute(arguments: [name])
///     }
/// }
/// ```
public final class Statement {
    let handle: OpaquePointer
    unowned let database: Database
    /// The SQL of this statement.
    ///
    /// ```swift
    /// try db.cachedStatement(sql: "SELECT * FROM player").sql   // "SELECT * FROM player"
    /// ```
    public let sql: String
    /// What the statement reads and writes, from the authorizer: at its
    /// prepare, then at each time SQLite re-prepares it after a schema
    /// change (see `Database.statementWasReprepared`).
    private(set) var footprint: StatementFootprint
    /// SQLite's count of its own re-prepares of this statement
    /// (`SQLITE_STMTSTATUS_REPREPARE`) when the footprint was taken.
    private var reprepareCount: Int32 = 0
    /// Whether the statement leaves the database unchanged (`sqlite3_stmt_readonly`).
    ///
    /// ```swift
    /// try db.cachedStatement(sql: "SELECT * FROM player").isReadOnly   // true; an INSERT's is false
    /// ```
    public let isReadOnly: Bool
    /// Whether the statement is itself an `EXPLAIN` or `EXPLAIN QUERY PLAN`
    /// statement (`sqlite3_stmt_isexplain`).
    ///
    /// ```swift
    /// try db.cachedStatement(sql: "EXPLAIN QUERY PLAN SELECT * FROM player").isExplain   // true
    /// ```
    public var isExplain: Bool { sqlite3_stmt_isexplain(handle) != 0 }
    /// The name of each parameter, in order, with its prefix (`:n`, `@n`,
    /// `$n`, `?1`); `nil` for a plain `?`. A name used twice counts once.
    ///
    /// ```swift
    /// try db.cachedStatement(sql: "SELECT * FROM player WHERE score > :min LIMIT ?").parameterNames   // [":min", nil]
    /// ```
    public var parameterNames: [String?] {
        (0..<sqlite3_bind_parameter_count(handle)).map { index in
            sqlite3_bind_parameter_name(handle, index + 1).map { String(cString: $0) }
        }
    }
    /// The result column names, in order.
    public private(set) var columnNames: [String]
    private(set) var columnCount: Int32
    /// A cursor reads this statement's rows (see `ValueStepper`): the
    /// statement cache does not hand it out meanwhile.
    var isLeased = false
    /// Under an untrusted-SQL policy: when this run of the statement must
    /// stop, and the size of the rows it returned so far (set at its first step).
    var untrustedDeadline: ContinuousClock.Instant?
    var untrustedResultSize = 0

    /// Whether the statement cache may hand the statement out: no cursor
    /// holds it and it is not between rows.
    var isAvailable: Bool { !isLeased && sqlite3_stmt_busy(handle) == 0 }

    init(handle: OpaquePointer, database: Database, sql: String, footprint: StatementFootprint) {
        self.handle = handle
        self.database = database
        self.sql = sql
        self.footprint = footprint
        self.isReadOnly = sqlite3_stmt_readonly(handle) != 0
        self.columnCount = sqlite3_column_count(handle)
        self.columnNames = Statement.columnNames(of: handle)
    }

    deinit {
        sqlite3_finalize(handle)
    }

    private static func columnNames(of handle: OpaquePointer) -> [String] {
        (0..<sqlite3_column_count(handle)).map { index in
            sqlite3_column_name(handle, index).map { String(cString: $0) } ?? ""
        }
    }

    /// Whether SQLite re-prepared the statement since its footprint was
    /// taken: asked only after the authorizer ran outside a prepare of ours.
    var wasReprepared: Bool {
        sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0) != reprepareCount
    }

    /// SQLite re-prepared the statement after a schema change (by another
    /// connection, or before the first step of a transaction that found a
    /// newer schema): takes what the new program reads and writes, its
    /// result columns, and forgets the rows it looked up by rowid.
    func didReprepare(footprint: StatementFootprint) {
        self.footprint = footprint
        reprepareCount = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)
        rowIDLookupsCache = nil
        columnCount = sqlite3_column_count(handle)
        columnNames = Statement.columnNames(of: handle)
    }

    /// The arguments of the last `bind`, for the rowids it looks up.
    private var boundArguments = StatementArguments()
    /// The rows read by primary key, analysed on first use (see `RowIDLookups`).
    private var rowIDLookupsCache: RowIDLookups?

    /// Binds `arguments`, checking their number or names against the SQL.
    func bind(_ arguments: StatementArguments) throws {
        boundArguments = arguments
        if arguments.isEmpty && sqlite3_bind_parameter_count(handle) == 0 { return }
        var consumer = StatementArguments.Consumer(arguments)
        try consumer.bind(handle, sql: sql, isLastStatement: true)
    }

    /// The value bound to parameter `index` (1-based) by the last `bind`.
    func boundValue(at index: Int32) -> DatabaseValue? {
        if !boundArguments.values.isEmpty {
            let position = Int(index) - 1
            return boundArguments.values.indices.contains(position) ? boundArguments.values[position] : nil
        }
        guard let name = sqlite3_bind_parameter_name(handle, index).map({ String(cString: $0) }) else { return nil }
        return boundArguments.namedValues[name] ?? boundArguments.namedValues[String(name.dropFirst())]
    }

    /// What this execution reads: the footprint, restricted to the rowids
    /// looked up with the current bindings.
    func executionRegion() -> DatabaseRegion {
        if rowIDLookupsCache == nil { rowIDLookupsCache = RowIDLookups.analyse(sql: sql, in: database) }
        guard let lookups = rowIDLookupsCache, !lookups.isEmpty else { return footprint.reads }
        var region = footprint.reads
        for (table, rowIDs) in lookups.rowIDs(boundIn: self) { region.restrict(table, toRowIDs: rowIDs) }
        return region
    }

    /// Runs the statement to completion with `arguments`, ignoring any rows.
    ///
    /// ```swift
    /// try statement.execute(arguments: ["Arthur"])
    /// ```
    public func execute(arguments: StatementArguments = []) throws {
        try bind(arguments)
        database.recordReads(executionRegion())
        try database.runToCompletion(self)
    }
}

@available(*, unavailable, message: "a statement belongs to one connection and one thread")
extension Statement: Sendable {}

/// Where a result column comes from: a column of a table, or nothing (an
/// expression).
///
/// ```swift
/// let statement = try db.cachedStatement(sql: "SELECT id, name, score * 2 AS double FROM player")
/// statement.columnOrigins[0]   // ColumnOrigin(schema: "main", table: "player", column: "id", isPrimaryKey: true)
/// statement.columnOrigins[2]   // nil
/// ```
public struct ColumnOrigin: Hashable, Sendable {
    /// The schema of the table: `main`, `temp`, or an attached name.
    ///
    /// ```swift
    /// statement.columnOrigins[0]?.schema   // "main"
    /// ```
    public let schema: String
    /// The table.
    ///
    /// ```swift
    /// statement.columnOrigins[0]?.table   // "player"
    /// ```
    public let table: String
    /// The column in the table.
    ///
    /// ```swift
    /// try db.cachedStatement(sql: "SELECT name AS player_name FROM player").columnOrigins[0]?.column   // "name"
    /// ```
    public let column: String
    /// Whether the column is part of the table's primary key (or is its rowid).
    ///
    /// ```swift
    /// statement.columnOrigins[0]?.isPrimaryKey   // true: `id` is player's INTEGER PRIMARY KEY
    /// ```
    public let isPrimaryKey: Bool
}

extension Statement {
    /// For each result column, the table column it reads, or `nil` for an
    /// expression.
    ///
    /// ```swift
    /// let statement = try db.cachedStatement(sql: "SELECT id, upper(name) FROM player")
    /// statement.columnOrigins.map { $0?.column }   // ["id", nil]
    /// ```
    public var columnOrigins: [ColumnOrigin?] {
        (0..<columnCount).map { index in
            guard let schema = sqlite3_column_database_name(handle, index),
                let table = sqlite3_column_table_name(handle, index),
                let column = sqlite3_column_origin_name(handle, index)
            else { return nil }
            var primaryKey: Int32 = 0
            let code = sqlite3_table_column_metadata(
                sqlite3_db_handle(handle), schema, table, column, nil, nil, nil, &primaryKey, nil)
            return ColumnOrigin(
                schema: String(cString: schema), table: String(cString: table), column: String(cString: column),
                isPrimaryKey: code == SQLITE_OK && primaryKey != 0)
        }
    }
}
