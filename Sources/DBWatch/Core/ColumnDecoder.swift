import Foundation

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
func columnMismatch<T>(_ type: T.Type, _ reader: ColumnReader, _ index: Int, _ key: any CodingKey) -> DecodingError {
    DecodingError.conversion(reader.value(at: index), to: T.self, column: key)
}
