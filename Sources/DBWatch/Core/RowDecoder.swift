import CSQLite
import Foundation

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

/// A `Decoder` over one row: a keyed container maps property names to
/// columns; a single-value container reads the first column (or the column a
/// nested property lives in).
///
/// A query decodes all its rows through one instance over its statement: a
/// class passes as `any Decoder` without a box allocation, and the keyed
/// container built for the first row serves the others (building it per row,
/// a box allocation and generic metadata lookups, was a large part of
/// decoding).
final class ColumnDecoder: Decoder {
    let reader: ColumnReader
    /// When set, the decoder stands for this one column (a nested property).
    let singleColumn: Int?
    /// That column's key in errors (the property's), if not its position.
    let columnKey: (any CodingKey)?
    /// The coding key type of the cached container.
    private var containerKeyType: ObjectIdentifier?
    /// The box of the cached `KeyedDecodingContainer` (one reference).
    private var containerBox: AnyObject?

    init(reader: ColumnReader, singleColumn: Int? = nil, key: (any CodingKey)? = nil) {
        self.reader = reader
        self.singleColumn = singleColumn
        self.columnKey = key
    }

    var codingPath: [any CodingKey] {
        singleColumn.map { [columnKey ?? ColumnKey(intValue: $0)] } ?? []
    }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Whether the type decoded from this one column asked for a keyed or
    /// unkeyed container: the column holds JSON.
    private(set) var asksForJSON = false

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        // One column's value asks for a keyed container: it is JSON.
        if singleColumn != nil {
            asksForJSON = true
            throw JSONInColumn()
        }
        if containerKeyType == ObjectIdentifier(Key.self), let containerBox {
            return unsafeBitCast(containerBox, to: KeyedDecodingContainer<Key>.self)
        }
        let container = KeyedDecodingContainer(KeyedColumns<Key>(reader: reader))
        // A KeyedDecodingContainer is one reference to its box; another
        // layout (a future standard library) is simply not cached.
        if MemoryLayout<KeyedDecodingContainer<Key>>.size == MemoryLayout<AnyObject>.size {
            containerKeyType = ObjectIdentifier(Key.self)
            containerBox = unsafeBitCast(container, to: AnyObject.self)
        }
        return container
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        if singleColumn != nil {
            asksForJSON = true
            throw JSONInColumn()
        }
        throw DecodingError.typeMismatch(
            [Any].self, .init(codingPath: codingPath, debugDescription: "a row does not decode as an array"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        if singleColumn == nil && reader.columnCount < 1 {
            throw DecodingError.valueNotFound(
                Any.self, .init(codingPath: codingPath, debugDescription: "the row has no column"))
        }
        return SingleColumn(reader: reader, index: singleColumn ?? 0, decoder: self)
    }
}

/// Decodes `T` from the value at `index` of `reader`, through
/// ``DatabaseValueConvertible`` when `T` conforms, or `T(from:)` on a
/// single-column decoder (enums with raw values, wrappers), or from JSON
/// text when `T` is a nested structure (an array, a struct), as GRDB reads
/// nested `Codable` properties.
@inline(__always)
func decodeColumn<T: Decodable>(_ type: T.Type, reader: ColumnReader, index: Int, key: any CodingKey) throws -> T {
    if let convertible = T.self as? any DatabaseValueConvertible.Type {
        return try reader.value(at: index).converted(to: T.self, by: convertible, column: key)
    }
    let decoder = ColumnDecoder(reader: reader, singleColumn: index, key: key)
    do {
        return try T(from: decoder)
    } catch {
        // Whatever `init(from:)` made of the refused container (its own
        // error, one that wraps ours), the column is JSON.
        guard decoder.asksForJSON else { throw error }
        return try decodeJSON(T.self, from: reader.value(at: index), column: key)
    }
}

/// Thrown by a single column's decoder when the type asks for a keyed or
/// unkeyed container, to end that attempt: the column holds JSON.
private struct JSONInColumn: Error {}

/// `T` from the JSON text (or blob) of a column; its errors name the
/// column first, then the path inside the JSON.
private func decodeJSON<T: Decodable>(_ type: T.Type, from value: DatabaseValue, column: any CodingKey) throws -> T {
    let json: Data
    switch value {
    case .text(let text): json = Data(text.utf8)
    case .blob(let data), .invalidUTF8Text(let data): json = data
    default: throw DecodingError.conversion(value, to: T.self, column: column)
    }
    do {
        return try DatabaseValue.jsonDecoder().decode(T.self, from: json)
    } catch let error as DecodingError {
        throw error.inColumn(column, of: T.self)
    }
}

extension DecodingError {
    /// The same error, its coding path starting at `column`.
    fileprivate func inColumn(_ column: any CodingKey, of type: Any.Type) -> DecodingError {
        func moved(_ context: Context) -> Context {
            Context(
                codingPath: [column] + context.codingPath,
                debugDescription: "JSON in column \(column.stringValue) as \(type): \(context.debugDescription)",
                underlyingError: context.underlyingError)
        }
        switch self {
        case .typeMismatch(let type, let context): return .typeMismatch(type, moved(context))
        case .valueNotFound(let type, let context): return .valueNotFound(type, moved(context))
        case .keyNotFound(let key, let context): return .keyNotFound(key, moved(context))
        case .dataCorrupted(let context): return .dataCorrupted(moved(context))
        @unknown default: return self
        }
    }
}

/// The error path, out of line: inlined, the value it reads made every
/// property's decode method larger.
@inline(never)
private func mismatch<T>(_ type: T.Type, _ reader: ColumnReader, _ index: Int, _ key: any CodingKey) -> DecodingError {
    DecodingError.conversion(reader.value(at: index), to: T.self, column: key)
}

struct KeyedColumns<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let reader: ColumnReader
    var codingPath: [any CodingKey] { [] }
    /// The columns whose names make keys: what a type with dynamic keys
    /// (a dictionary) iterates.
    var allKeys: [Key] { reader.names.compactMap { Key(stringValue: $0) } }

    @inline(__always)
    private func index(_ key: Key) throws -> Int {
        guard let index = reader.index(of: key.stringValue) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: [], debugDescription: "no column named \(key.stringValue)"))
        }
        return index
    }

    func contains(_ key: Key) -> Bool { reader.index(of: key.stringValue) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { reader.isNull(at: try index(key)) }

    @inline(__always)
    private func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: Key) throws -> T {
        let index = try index(key)
        guard let value = reader.int64(at: index), let result = T(exactly: value) else {
            throw mismatch(T.self, reader, index, key)
        }
        return result
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try integer(Int64.self, key) != 0 }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(Int.self, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(Int8.self, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(Int16.self, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(Int32.self, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(Int64.self, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(UInt.self, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(UInt8.self, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(UInt16.self, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(UInt32.self, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(UInt64.self, key) }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        let index = try index(key)
        guard let value = reader.double(at: index) else { throw mismatch(Double.self, reader, index, key) }
        return value
    }

    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        let index = try index(key)
        guard let value = reader.float(at: index) else { throw mismatch(Float.self, reader, index, key) }
        return value
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        let index = try index(key)
        guard let value = reader.string(at: index) else { throw mismatch(String.self, reader, index, key) }
        return value
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decodeColumn(T.self, reader: reader, index: try index(key), key: key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        throw DecodingError.typeMismatch(
            [String: Any].self, .init(codingPath: [key], debugDescription: "nested containers are not supported"))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch(
            [Any].self, .init(codingPath: [key], debugDescription: "nested containers are not supported"))
    }

    func superDecoder() throws -> any Decoder { ColumnDecoder(reader: reader) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ColumnDecoder(reader: reader) }
}

struct SingleColumn: SingleValueDecodingContainer {
    let reader: ColumnReader
    let index: Int
    /// Its decoder, which knows a nested property's key: three words in
    /// all, which an existential container holds without a box.
    let decoder: ColumnDecoder
    var codingPath: [any CodingKey] { [columnKey] }
    private var columnKey: any CodingKey { decoder.columnKey ?? ColumnKey(intValue: index) }

    func decodeNil() -> Bool { reader.isNull(at: index) }

    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard let value = reader.int64(at: index), let result = T(exactly: value) else {
            throw mismatch(T.self, reader, index, columnKey)
        }
        return result
    }

    func decode(_ type: Bool.Type) throws -> Bool { try integer(Int64.self) != 0 }
    func decode(_ type: Int.Type) throws -> Int { try integer(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(UInt64.self) }

    func decode(_ type: Double.Type) throws -> Double {
        guard let value = reader.double(at: index) else {
            throw mismatch(Double.self, reader, index, columnKey)
        }
        return value
    }

    func decode(_ type: Float.Type) throws -> Float {
        guard let value = reader.float(at: index) else {
            throw mismatch(Float.self, reader, index, columnKey)
        }
        return value
    }

    func decode(_ type: String.Type) throws -> String {
        guard let value = reader.string(at: index) else {
            throw mismatch(String.self, reader, index, columnKey)
        }
        return value
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeColumn(T.self, reader: reader, index: index, key: columnKey)
    }
}
