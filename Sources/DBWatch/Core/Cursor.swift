import CSQLite

/// Steps the rows of a query one at a time, without building an array: for
/// large results.
///
/// A cursor is valid only inside the access closure that created it. It
/// resets its statement when it reaches the end, and when it is dropped
/// before the end.
///
/// ```swift
/// let names = try await pool.read { db in
///     let cursor = try db.fetchCursor(sql: "SELECT id, name FROM player")
///     var names: [String] = []
///     while let row = try cursor.next() {
///         names.append(try row.decode(String.self, at: "name"))
///     }
///     return names
/// }
/// ```
public final class RowCursor {
    let rows: ValueStepper<Row>

    init(statement: Statement) {
        let handle = statement.handle
        self.rows = ValueStepper(statement: statement, reader: nil) {
            var values: [DatabaseValue] = []
            values.reserveCapacity(Int(statement.columnCount))
            for index in 0..<statement.columnCount {
                values.append(DatabaseValue(statement: handle, column: index))
            }
            return Row(columnNames: statement.columnNames, values: values)
        }
    }

    /// The next row, or `nil` at the end.
    ///
    /// ```swift
    /// while let row = try cursor.next() { names.append(try row.decode(String.self, at: "name")) }
    /// ```
    public func next() throws -> Row? {
        try rows.next(nullIsNil: false)
    }
}

/// Steps the rows of a query decoded as `T`, one at a time.
///
/// ```swift
/// let total = try await pool.read { db in
///     let players = try db.fetchCursor(Player.self, sql: "SELECT * FROM player")
///     var total = 0
///     while let player = try players.next() { total += player.score }
///     return total
/// }
/// ```
public final class DecodableCursor<T: Decodable> {
    let rows: ValueStepper<T>

    init(statement: Statement) {
        let (decodeRow, reader) = Database.rowDecoder(for: T.self, statement: statement)
        self.rows = ValueStepper(statement: statement, reader: reader, decodeRow: decodeRow)
    }

    /// The next value, or `nil` at the end.
    ///
    /// ```swift
    /// while let player = try players.next() { total += player.score }   // nil after the last row
    /// ```
    public func next() throws -> T? {
        try rows.next(nullIsNil: false)
    }
}

/// Steps the rows of a query as ``FetchableRecord`` values, one at a time.
///
/// ```swift
/// let total = try await pool.read { db in
///     let players = try db.fetchCursor(Player.self, sql: "SELECT id, name, score FROM player")
///     var total = 0
///     while let player = try players.next() { total += player.score }
///     return total
/// }
/// ```
public final class RecordCursor<T: FetchableRecord> {
    let rows: ValueStepper<T>

    init(statement: Statement) {
        let reader = ColumnReader(statement: statement)
        self.rows = ValueStepper(statement: statement, reader: reader) { try reader.withView(T.init(row:)) }
    }

    /// The next record, or `nil` at the end.
    ///
    /// ```swift
    /// while let player = try players.next() { total += player.score }   // nil after the last row
    /// ```
    public func next() throws -> T? {
        try rows.next(nullIsNil: false)
    }
}

/// Steps a statement and makes a value of each row with a function chosen
/// once per query: the engine of the typed cursors.
final class ValueStepper<T> {
    let statement: Statement
    /// Held strongly (a statement's reference is unowned): no unowned
    /// retain per row. The cursor lives inside the access closure, so this
    /// makes no cycle.
    private let database: Database
    /// The columns `decodeRow` reads, if it reads them by name.
    private let reader: ColumnReader?
    private let decodeRow: () throws -> T
    private var isDone = false
    /// SQLite re-prepares a statement whose schema another connection
    /// changed at its first step: the reader takes its columns again then.
    private var isFirstRow = true

    /// Leases `statement` until the end of its rows: the statement cache
    /// hands it to no one else meanwhile, even before its first step (a
    /// second cursor of the same SQL would bind its own arguments over this
    /// one's and step the same rows).
    init(statement: Statement, reader: ColumnReader?, decodeRow: @escaping () throws -> T) {
        self.statement = statement
        self.database = statement.database
        self.reader = reader
        self.decodeRow = decodeRow
        statement.isLeased = true
    }

    deinit {
        if !isDone { finish(abandoning: true) }
    }

    /// The rows are over: resets the statement if they were not all read,
    /// and gives it back to the statement cache.
    private func finish(abandoning: Bool) {
        isDone = true
        if abandoning { database.abandon(statement) }
        statement.isLeased = false
    }

    /// The next value; with `nullIsNil`, also `nil` when the row's first
    /// column is `NULL` (for ``Database/fetchOne(_:sql:arguments:)`` of a
    /// single value).
    func next(nullIsNil: Bool) throws -> T? {
        guard !isDone else { return nil }
        let hasRow: Bool
        do {
            hasRow = try database.step(statement)
        } catch {
            // step has reset the statement already: stepping again would
            // restart the query.
            finish(abandoning: false)
            throw error
        }
        guard hasRow else {
            finish(abandoning: false)
            return nil
        }
        if nullIsNil && statement.columnCount > 0 && sqlite3_column_type(statement.handle, 0) == SQLITE_NULL {
            return nil
        }
        if isFirstRow {
            isFirstRow = false
            reader?.takeColumns(of: statement)
        }
        do {
            return try decodeRow()
        } catch {
            finish(abandoning: true)
            throw error
        }
    }
}

@available(*, unavailable, message: "a cursor belongs to one connection and one thread")
extension RowCursor: Sendable {}

@available(*, unavailable, message: "a cursor belongs to one connection and one thread")
extension DecodableCursor: Sendable {}

@available(*, unavailable, message: "a cursor belongs to one connection and one thread")
extension RecordCursor: Sendable {}
