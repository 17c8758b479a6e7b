import CSQLite

/// The columns a row decoder reads: the current row of a live statement
/// (the fast path of `fetchAll(T.self, …)`, one reader for all the rows of a
/// query) or a fetched ``Row``.
///
/// A final class, not a generic parameter of the decoder: the containers
/// call it directly, without witness tables, value-witness copies or generic
/// metadata lookups per property, which were most of the cost of decoding.
final class ColumnReader {
    private enum Storage {
        case statement(OpaquePointer)
        case row(Row)
    }

    private let storage: Storage
    /// The columns below change only in ``takeColumns(of:)``, before the
    /// first row is read.
    @exclusivity(unchecked) private(set) var columnCount: Int
    /// Statements only: the column names, for ``copy()``.
    @exclusivity(unchecked) private var columnNames: [String]
    /// Statements only: the first position of each column name, and of
    /// each lowercased name (apart: a lowercased name may be another
    /// column's exact name).
    @exclusivity(unchecked) private var indexByName: [String: Int]
    @exclusivity(unchecked) private var indexByLowercasedName: [String: Int]
    /// Statements only: the keys asked for in the previous row, in order, so
    /// that later rows pay one string comparison per property instead of a
    /// lookup. Only the query's thread touches them, one row at a time.
    @exclusivity(unchecked) private var recentKeys: [(key: String, index: Int?)] = []
    @exclusivity(unchecked) private var position = 0
    /// The serial of the one ``RowView`` that may read now; changed when a
    /// view's `init(row:)` returns, so that a view kept beyond it reads
    /// nothing (its statement has moved on, or is finalized).
    @exclusivity(unchecked) private(set) var viewSerial: UInt64 = 0

    init(statement: Statement) {
        self.storage = .statement(statement.handle)
        (columnCount, columnNames, indexByName, indexByLowercasedName) = (0, [], [:], [:])
        setColumns(statement.columnNames)
    }

    init(row: Row) {
        self.storage = .row(row)
        self.columnCount = row.count
        self.columnNames = []
        self.indexByName = [:]
        self.indexByLowercasedName = [:]
    }

    /// Takes the result columns of `statement` (again, after SQLite
    /// re-prepared it at its first step: they may have changed).
    func takeColumns(of statement: Statement) {
        // Equal arrays that share storage compare without reading them.
        if statement.columnNames != columnNames { setColumns(statement.columnNames) }
    }

    private func setColumns(_ names: [String]) {
        var indexByName: [String: Int] = [:]
        var indexByLowercasedName: [String: Int] = [:]
        for (index, name) in names.enumerated().reversed() {
            indexByName[name] = index
            indexByLowercasedName[name.lowercased()] = index
        }
        self.columnCount = names.count
        self.columnNames = names
        self.indexByName = indexByName
        self.indexByLowercasedName = indexByLowercasedName
        recentKeys = []
    }

    /// The names of the columns, in order.
    var names: [String] {
        switch storage {
        case .statement: return columnNames
        case .row(let row): return row.columnNames
        }
    }

    /// The current row as a ``Row`` that outlives the statement's step.
    func copy() -> Row {
        switch storage {
        case .statement: return Row(columnNames: columnNames, values: (0..<columnCount).map { value(at: $0) })
        case .row(let row): return row
        }
    }

    /// Starts a new row: lookups replay from the first remembered key.
    @inline(__always)
    func startRow() { position = 0 }

    /// Reads the current row with `read`, through a view that is valid
    /// only during the call.
    @inline(__always)
    func withView<T>(_ read: (RowView) throws -> T) rethrows -> T {
        position = 0
        viewSerial &+= 1
        defer { viewSerial &+= 1 }
        return try read(RowView(reader: self, serial: viewSerial))
    }

    /// The position of the column named `key` (exact name first, then
    /// case-insensitively), or nil.
    @inline(__always)
    func index(of key: String) -> Int? {
        if case .row(let row) = storage { return row.index(of: key) }
        defer { position += 1 }
        if position < recentKeys.count, recentKeys[position].key == key {
            return recentKeys[position].index
        }
        let index = indexByName[key] ?? indexByLowercasedName[key.lowercased()]
        if position < recentKeys.count {
            recentKeys[position] = (key, index)
        } else {
            recentKeys.append((key, index))
        }
        return index
    }

    @inline(__always)
    func isNull(at index: Int) -> Bool {
        switch storage {
        case .statement(let handle): return sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL
        case .row(let row): return row.values[index].isNull
        }
    }

    @inline(__always)
    func value(at index: Int) -> DatabaseValue {
        switch storage {
        case .statement(let handle): return DatabaseValue(statement: handle, column: Int32(index))
        case .row(let row): return row.values[index]
        }
    }

    @inline(__always)
    func int64(at index: Int) -> Int64? {
        guard case .statement(let handle) = storage else { return Int64.fromDatabaseValue(value(at: index)) }
        let value = sqlite3_column_value(handle, Int32(index))
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return sqlite3_value_int64(value)
        case SQLITE_FLOAT: return Int64(exactly: sqlite3_value_double(value))
        default: return nil
        }
    }

    @inline(__always)
    func double(at index: Int) -> Double? {
        guard case .statement(let handle) = storage else { return Double.fromDatabaseValue(value(at: index)) }
        let value = sqlite3_column_value(handle, Int32(index))
        switch sqlite3_value_type(value) {
        case SQLITE_FLOAT, SQLITE_INTEGER: return sqlite3_value_double(value)
        default: return nil
        }
    }

    /// A `Float`, or nil when the value is not a number or is finite but
    /// beyond `Float`'s range (it would become infinity).
    func float(at index: Int) -> Float? {
        guard let value = double(at: index) else { return nil }
        let float = Float(value)
        return float.isInfinite && value.isFinite ? nil : float
    }

    @inline(__always)
    func string(at index: Int) -> String? {
        guard case .statement(let handle) = storage else { return String.fromDatabaseValue(value(at: index)) }
        let value = sqlite3_column_value(handle, Int32(index))
        guard sqlite3_value_type(value) == SQLITE_TEXT else { return nil }
        return String(textOf: value)
    }
}
