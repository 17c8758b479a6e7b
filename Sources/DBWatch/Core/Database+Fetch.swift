import CSQLite

extension Database {
    /// Runs one statement, or a script of several separated by `;`.
    ///
    /// Positional arguments are consumed in order by the statements of a
    /// script; named arguments are matched by name in every statement. An
    /// argument that no statement uses is an error.
    ///
    /// ```swift
    /// try db.execute(sql: """
    ///     CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
    ///     INSERT INTO player (name) VALUES (?);
    ///     """, arguments: ["Arthur"])
    /// ```
    public func execute(sql: String, arguments: StatementArguments = []) throws {
        // Only SQL that holds several statements, or none, is a script: the
        // error of a statement that fails to prepare is the one to throw.
        guard case .statement(let statement) = try cachedStatementUnlessScript(sql: sql) else {
            return try executeScript(sql: sql, arguments: arguments)
        }
        try statement.bind(arguments)
        recordReads(statement.executionRegion())
        try runToCompletion(statement)
    }

    /// Runs every statement of `sql` in order, without caching them.
    func executeScript(sql: String, arguments: StatementArguments) throws {
        let handle = try openHandle()
        try Database.refuseNULCharacter(in: sql)
        var consumer = StatementArguments.Consumer(arguments)
        var remaining = sql
        var ranAny = false
        while !remaining.isEmpty {
            let (statement, tail) = try remaining.withCString { cSQL in
                try prepare(cSQL, sql: nil, handle: handle, persistent: false)
            }
            remaining = tail
            guard let statement else { continue }
            // The checks of `cachedStatement`, for scripts under a policy.
            if untrustedSQL.isActive { try checkUntrusted(statement) }
            ranAny = true
            // Bound by the consumer, not `bind`: the rowids it looks up are unknown.
            recordReads(statement.footprint.reads)
            try consumer.bind(statement.handle, sql: statement.sql, isLastStatement: tail.isEmpty)
            try runToCompletion(statement)
        }
        if !ranAny && !arguments.isEmpty {
            throw SQLiteError.misuse("arguments given to SQL that holds no statement", sql: sql)
        }
    }

    /// Prepares `sql` (one statement) and binds `arguments`.
    @inline(__always)
    func boundStatement(sql: String, arguments: StatementArguments) throws -> Statement {
        let statement = try cachedStatement(sql: sql)
        try statement.bind(arguments)
        recordReads(statement.executionRegion())
        return statement
    }

    /// All rows of a query.
    ///
    /// ```swift
    /// let rows = try db.fetchAll(sql: "SELECT * FROM player WHERE score > ?", arguments: [10])
    /// ```
    public func fetchAll(sql: String, arguments: StatementArguments = []) throws -> [Row] {
        let cursor = try fetchCursor(sql: sql, arguments: arguments)
        var rows: [Row] = []
        while let row = try cursor.next() { rows.append(row) }
        return rows
    }

    /// The first row of a query, or `nil` when there is none.
    ///
    /// ```swift
    /// let row = try db.fetchOne(sql: "SELECT * FROM player WHERE id = ?", arguments: [1])
    /// ```
    public func fetchOne(sql: String, arguments: StatementArguments = []) throws -> Row? {
        try fetchCursor(sql: sql, arguments: arguments).next()
    }

    /// A cursor over the rows of a query.
    ///
    /// ```swift
    /// let cursor = try db.fetchCursor(sql: "SELECT * FROM event")
    /// while let row = try cursor.next() { … }
    /// ```
    public func fetchCursor(sql: String, arguments: StatementArguments = []) throws -> RowCursor {
        RowCursor(statement: try boundStatement(sql: sql, arguments: arguments))
    }

    /// All rows decoded as `T`: a `Decodable` struct whose properties match
    /// column names, or a single value (`Int`, `String`, `Data`, optionals …)
    /// read from the first column.
    ///
    /// ```swift
    /// struct Player: Decodable { var id: Int64; var name: String; var score: Int }
    /// let players = try db.fetchAll(Player.self, sql: "SELECT * FROM player ORDER BY score DESC")
    /// let names = try db.fetchAll(String.self, sql: "SELECT name FROM player")
    /// ```
    ///
    /// Inlinable so that the loop that collects the values is specialized
    /// for `T` in the caller's module (unspecialized, every `append` looked
    /// up the metadata of `[T]`).
    @inlinable
    public func fetchAll<T: Decodable>(_ type: T.Type, sql: String, arguments: StatementArguments = []) throws -> [T] {
        let cursor = try fetchCursor(T.self, sql: sql, arguments: arguments)
        return try Database.collect(cursor.next)
    }

    /// The first row decoded as `T`, or `nil` when there is no row. For a
    /// single value (`Int`, `String`, `Double`, `Data` … any
    /// ``DatabaseValueConvertible`` type), also `nil` when the value is
    /// `NULL`, as for `max(score)` of an empty table; a `Decodable` struct
    /// still throws for a `NULL` in a non-optional property.
    ///
    /// ```swift
    /// let count = try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") ?? 0
    /// let best = try db.fetchOne(Int.self, sql: "SELECT max(score) FROM player")   // nil when empty
    /// let player = try db.fetchOne(Player.self, sql: "SELECT * FROM player WHERE id = ?", arguments: [1])
    /// ```
    public func fetchOne<T: Decodable>(_ type: T.Type, sql: String, arguments: StatementArguments = []) throws -> T? {
        let cursor = try fetchCursor(T.self, sql: sql, arguments: arguments)
        // `fetchOne(Int?.self, …)` keeps telling `NULL` (`.some(nil)`) from no row.
        let nullIsNil =
            T.self is any DatabaseValueConvertible.Type && !(T.self is any OptionalValue.Type)
            && !(T.self is any FetchableRecord.Type)
        return try cursor.rows.next(nullIsNil: nullIsNil)
    }

    /// A cursor over the rows of a query decoded as `T`.
    ///
    /// ```swift
    /// let players = try db.fetchCursor(Player.self, sql: "SELECT * FROM player")
    /// while let player = try players.next() { … }
    /// ```
    public func fetchCursor<T: Decodable>(_ type: T.Type, sql: String, arguments: StatementArguments = []) throws
        -> DecodableCursor<T>
    {
        DecodableCursor(statement: try boundStatement(sql: sql, arguments: arguments))
    }

    /// All rows of a query as ``FetchableRecord`` values, each read in
    /// place by `init(row:)`.
    ///
    /// ```swift
    /// let players = try db.fetchAll(Player.self, sql: "SELECT id, name, score FROM player")
    /// ```
    @inlinable
    public func fetchAll<T: FetchableRecord>(_ type: T.Type, sql: String, arguments: StatementArguments = []) throws
        -> [T]
    {
        let cursor = try fetchCursor(T.self, sql: sql, arguments: arguments)
        return try Database.collect(cursor.next)
    }

    /// The first row as a ``FetchableRecord`` value, or `nil` when there is
    /// no row.
    ///
    /// ```swift
    /// let player = try db.fetchOne(Player.self, sql: "SELECT id, name, score FROM player WHERE id = ?", arguments: [1])
    /// ```
    public func fetchOne<T: FetchableRecord>(_ type: T.Type, sql: String, arguments: StatementArguments = []) throws
        -> T?
    {
        try fetchCursor(T.self, sql: sql, arguments: arguments).next()
    }

    /// A cursor over the rows of a query as ``FetchableRecord`` values.
    ///
    /// ```swift
    /// let players = try db.fetchCursor(Player.self, sql: "SELECT id, name, score FROM player")
    /// while let player = try players.next() { … }
    /// ```
    public func fetchCursor<T: FetchableRecord>(_ type: T.Type, sql: String, arguments: StatementArguments = []) throws
        -> RecordCursor<T>
    {
        RecordCursor(statement: try boundStatement(sql: sql, arguments: arguments))
    }

    /// All rows of a query as a type that is both `Decodable` and
    /// ``FetchableRecord``: read by `init(row:)`, the faster of the two.
    ///
    /// ```swift
    /// struct Player: Codable, FetchableRecord { … }
    /// let players = try db.fetchAll(Player.self, sql: "SELECT id, name, score FROM player")
    /// ```
    @inlinable
    public func fetchAll<T: Decodable & FetchableRecord>(
        _ type: T.Type, sql: String, arguments: StatementArguments = []
    ) throws -> [T] {
        let cursor: RecordCursor<T> = try fetchCursor(T.self, sql: sql, arguments: arguments)
        return try Database.collect(cursor.next)
    }

    /// The first row as a type that is both `Decodable` and
    /// ``FetchableRecord``, read by `init(row:)`; `nil` when there is no row.
    ///
    /// ```swift
    /// let player = try db.fetchOne(Player.self, sql: "SELECT id, name, score FROM player WHERE id = ?", arguments: [1])
    /// ```
    public func fetchOne<T: Decodable & FetchableRecord>(
        _ type: T.Type, sql: String, arguments: StatementArguments = []
    ) throws -> T? {
        let cursor: RecordCursor<T> = try fetchCursor(T.self, sql: sql, arguments: arguments)
        return try cursor.next()
    }

    /// A cursor over the rows of a query as a type that is both `Decodable`
    /// and ``FetchableRecord``, read by `init(row:)`.
    ///
    /// ```swift
    /// let players = try db.fetchCursor(Player.self, sql: "SELECT id, name, score FROM player")
    /// ```
    public func fetchCursor<T: Decodable & FetchableRecord>(
        _ type: T.Type, sql: String, arguments: StatementArguments = []
    ) throws -> RecordCursor<T> {
        RecordCursor(statement: try boundStatement(sql: sql, arguments: arguments))
    }

    /// Every value `next` gives, in order: the loop of the `fetchAll`
    /// methods, inlined with them into the caller's module.
    @inlinable
    static func collect<T>(_ next: () throws -> T?) rethrows -> [T] {
        var values: [T] = []
        while let value = try next() {
            values.append(value)
        }
        return values
    }

    /// The function that decodes the current row of `statement` as `T`,
    /// chosen once per query, and the reader of columns by name it uses, if
    /// any.
    ///
    /// A type that is also a ``FetchableRecord`` is read by `init(row:)`, as
    /// the overloads for `Decodable & FetchableRecord` do, also when the
    /// caller is generic over `T: Decodable` alone.
    static func rowDecoder<T: Decodable>(for type: T.Type, statement: Statement) -> (
        () throws -> T, ColumnReader?
    ) {
        if let record = T.self as? any FetchableRecord.Type {
            let reader = ColumnReader(statement: statement)
            return ({ try reader.withView { try record.init(row: $0) } as! T }, reader)
        }
        if let convertible = T.self as? any DatabaseValueConvertible.Type {
            let handle = statement.handle
            let decodeRow: () throws -> T = {
                guard statement.columnCount > 0 else {
                    throw DecodingError.valueNotFound(
                        T.self, .init(codingPath: [], debugDescription: "the query returns no column"))
                }
                return try DatabaseValue(statement: handle, column: 0).converted(
                    to: T.self, by: convertible,
                    column: statement.columnNames.first.map { ColumnKey(name: $0, index: 0) } ?? ColumnKey(intValue: 0))
            }
            return (decodeRow, nil)
        }
        let reader = ColumnReader(statement: statement)
        // Made an existential once: each row passes the same reference.
        let decoder: any Decoder = ColumnDecoder(reader: reader)
        let decodeRow: () throws -> T = {
            reader.startRow()
            return try T(from: decoder)
        }
        return (decodeRow, reader)
    }
}

/// Marks `Optional`, whatever its `Wrapped` type.
protocol OptionalValue {}

extension Optional: OptionalValue {}
