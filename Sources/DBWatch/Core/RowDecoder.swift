import CSQLite
import Foundation

/// Where a row decoder reads its columns from: a live statement (the fast
/// path of `fetchAll(T.self, …)`) or a fetched ``Row``.
protocol ColumnSource {
    var columnCount: Int { get }
    /// Where a per-query decoder keeps the keyed container it reuses for every row.
    var containerCache: KeyedContainerCache? { get }
    func columnIndex(of key: String) -> Int?
    func isNull(at index: Int) -> Bool
    func value(at index: Int) -> DatabaseValue
    func int64(at index: Int) -> Int64?
    func double(at index: Int) -> Double?
    func string(at index: Int) -> String?
}

/// Reads the current row of a statement without building a ``Row``.
struct StatementColumns: ColumnSource {
    let handle: OpaquePointer
    let lookup: ColumnLookup

    var columnCount: Int { lookup.columnNames.count }
    var containerCache: KeyedContainerCache? { lookup.containerCache }

    @inline(__always)
    func columnIndex(of key: String) -> Int? { lookup.index(of: key) }

    @inline(__always)
    func isNull(at index: Int) -> Bool { sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL }

    @inline(__always)
    func value(at index: Int) -> DatabaseValue { DatabaseValue(statement: handle, column: Int32(index)) }

    @inline(__always)
    func int64(at index: Int) -> Int64? {
        switch sqlite3_column_type(handle, Int32(index)) {
        case SQLITE_INTEGER: return sqlite3_column_int64(handle, Int32(index))
        case SQLITE_FLOAT: return Int64(exactly: sqlite3_column_double(handle, Int32(index)))
        default: return nil
        }
    }

    @inline(__always)
    func double(at index: Int) -> Double? {
        switch sqlite3_column_type(handle, Int32(index)) {
        case SQLITE_FLOAT, SQLITE_INTEGER: return sqlite3_column_double(handle, Int32(index))
        default: return nil
        }
    }

    @inline(__always)
    func string(at index: Int) -> String? {
        guard sqlite3_column_type(handle, Int32(index)) == SQLITE_TEXT else { return nil }
        return String(statement: handle, column: Int32(index))
    }
}

/// Maps property names to column positions for one statement, remembering
/// the order in which a `Decodable` type asks for them so that later rows
/// pay one string comparison per property instead of a lookup.
final class ColumnLookup {
    let columnNames: [String]
    let containerCache = KeyedContainerCache()
    private var indexByName: [String: Int] = [:]
    private var recentKeys: [(key: String, index: Int?)] = []
    private var position = 0

    init(columnNames: [String]) {
        self.columnNames = columnNames
        for (index, name) in columnNames.enumerated().reversed() {
            indexByName[name] = index
            indexByName[name.lowercased()] = indexByName[name.lowercased()] ?? index
        }
        for (index, name) in columnNames.enumerated() where indexByName[name.lowercased()] == nil {
            indexByName[name.lowercased()] = index
        }
    }

    /// Starts a new row: lookups replay from the first remembered key.
    @inline(__always)
    func startRow() { position = 0 }

    @inline(__always)
    func index(of key: String) -> Int? {
        defer { position += 1 }
        if position < recentKeys.count, recentKeys[position].key == key {
            return recentKeys[position].index
        }
        let index = indexByName[key] ?? indexByName[key.lowercased()]
        if position < recentKeys.count {
            recentKeys[position] = (key, index)
        } else {
            recentKeys.append((key, index))
        }
        return index
    }
}

/// The keyed container of a query, built for its first row and reused for
/// the others: every row of a statement reads through the same handle and
/// lookup, so the container is the same, and building it per row (a box
/// allocation and a generic metadata lookup) was a large part of decoding.
final class KeyedContainerCache {
    private var keyType: ObjectIdentifier?
    private var container: AnyObject?

    @inline(__always)
    func container<Key: CodingKey>(
        keyedBy type: Key.Type, make: () -> KeyedDecodingContainer<Key>
    ) -> KeyedDecodingContainer<Key> {
        // A KeyedDecodingContainer is one reference to its box; anything
        // else (a future layout) is simply not cached.
        guard MemoryLayout<KeyedDecodingContainer<Key>>.size == MemoryLayout<AnyObject>.size else { return make() }
        if keyType == ObjectIdentifier(Key.self), let container {
            return unsafeBitCast(container, to: KeyedDecodingContainer<Key>.self)
        }
        let made = make()
        keyType = ObjectIdentifier(Key.self)
        container = unsafeBitCast(made, to: AnyObject.self)
        return made
    }
}

/// Reads a fetched ``Row``.
struct RowColumns: ColumnSource {
    let row: Row
    var columnCount: Int { row.count }
    var containerCache: KeyedContainerCache? { nil }
    func columnIndex(of key: String) -> Int? { row.index(of: key) }
    func isNull(at index: Int) -> Bool { row.values[index].isNull }
    func value(at index: Int) -> DatabaseValue { row.values[index] }
    func int64(at index: Int) -> Int64? { Int64.fromDatabaseValue(row.values[index]) }
    func double(at index: Int) -> Double? { Double.fromDatabaseValue(row.values[index]) }
    func string(at index: Int) -> String? { String.fromDatabaseValue(row.values[index]) }
}

typealias RowValuesDecoder = ColumnDecoder<RowColumns>

extension ColumnDecoder where Source == RowColumns {
    init(row: Row) {
        self.init(source: RowColumns(row: row), singleColumn: nil)
    }
}

/// A `Decoder` over one row: a keyed container maps property names to
/// columns; a single-value container reads the first column (or the column a
/// nested property lives in).
struct ColumnDecoder<Source: ColumnSource>: Decoder {
    let source: Source
    /// When set, the decoder stands for this one column (a nested property).
    let singleColumn: Int?

    var codingPath: [any CodingKey] {
        singleColumn.map { [ColumnKey(intValue: $0)] } ?? []
    }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if let singleColumn {
            throw DecodingError.typeMismatch(
                [String: Any].self,
                .init(
                    codingPath: codingPath,
                    debugDescription:
                        "column \(singleColumn) holds one value; a nested keyed type needs DatabaseValueConvertible"))
        }
        guard let cache = source.containerCache else {
            return KeyedDecodingContainer(KeyedColumns<Key, Source>(source: source))
        }
        return cache.container(keyedBy: Key.self) { KeyedDecodingContainer(KeyedColumns<Key, Source>(source: source)) }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch(
            [Any].self, .init(codingPath: codingPath, debugDescription: "a row does not decode as an array"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        if singleColumn == nil && source.columnCount < 1 {
            throw DecodingError.valueNotFound(
                Any.self, .init(codingPath: codingPath, debugDescription: "the row has no column"))
        }
        return SingleColumn(source: source, index: singleColumn ?? 0)
    }
}

/// Decodes `T` from the value at `index` of `source`, through
/// ``DatabaseValueConvertible`` when `T` conforms, or `T(from:)` on a
/// single-column decoder (enums with raw values, wrappers).
@inline(__always)
func decodeColumn<T: Decodable, Source: ColumnSource>(_ type: T.Type, source: Source, index: Int, key: any CodingKey)
    throws -> T
{
    if let convertible = T.self as? any DatabaseValueConvertible.Type {
        let value = source.value(at: index)
        if let result = convertible.fromDatabaseValue(value) { return result as! T }
        throw DecodingError.conversion(value, to: T.self, column: key)
    }
    return try T(from: ColumnDecoder(source: source, singleColumn: index))
}

private func mismatch<T>(_ type: T.Type, _ source: some ColumnSource, _ index: Int, _ key: any CodingKey)
    -> DecodingError
{
    DecodingError.conversion(source.value(at: index), to: T.self, column: key)
}

struct KeyedColumns<Key: CodingKey, Source: ColumnSource>: KeyedDecodingContainerProtocol {
    let source: Source
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    @inline(__always)
    private func index(_ key: Key) throws -> Int {
        guard let index = source.columnIndex(of: key.stringValue) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: [], debugDescription: "no column named \(key.stringValue)"))
        }
        return index
    }

    func contains(_ key: Key) -> Bool { source.columnIndex(of: key.stringValue) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { source.isNull(at: try index(key)) }

    @inline(__always)
    private func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: Key) throws -> T {
        let index = try index(key)
        guard let value = source.int64(at: index), let result = T(exactly: value) else {
            throw mismatch(T.self, source, index, key)
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
        guard let value = source.double(at: index) else { throw mismatch(Double.self, source, index, key) }
        return value
    }

    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        let index = try index(key)
        guard let value = source.double(at: index) else { throw mismatch(Float.self, source, index, key) }
        return Float(value)
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        let index = try index(key)
        guard let value = source.string(at: index) else { throw mismatch(String.self, source, index, key) }
        return value
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decodeColumn(T.self, source: source, index: try index(key), key: key)
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

    func superDecoder() throws -> any Decoder { ColumnDecoder(source: source, singleColumn: nil) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ColumnDecoder(source: source, singleColumn: nil) }
}

struct SingleColumn<Source: ColumnSource>: SingleValueDecodingContainer {
    let source: Source
    let index: Int
    var codingPath: [any CodingKey] { [ColumnKey(intValue: index)] }

    func decodeNil() -> Bool { source.isNull(at: index) }

    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard let value = source.int64(at: index), let result = T(exactly: value) else {
            throw mismatch(T.self, source, index, ColumnKey(intValue: index))
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
        guard let value = source.double(at: index) else {
            throw mismatch(Double.self, source, index, ColumnKey(intValue: index))
        }
        return value
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

    func decode(_ type: String.Type) throws -> String {
        guard let value = source.string(at: index) else {
            throw mismatch(String.self, source, index, ColumnKey(intValue: index))
        }
        return value
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeColumn(T.self, source: source, index: index, key: ColumnKey(intValue: index))
    }
}
