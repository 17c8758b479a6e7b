/// The keyed container of ``ColumnDecoder``: a property's key names the
/// column it reads (exact name first, then case-insensitively).
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
            throw columnMismatch(T.self, reader, index, key)
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
        guard let value = reader.double(at: index) else { throw columnMismatch(Double.self, reader, index, key) }
        return value
    }

    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        let index = try index(key)
        guard let value = reader.float(at: index) else { throw columnMismatch(Float.self, reader, index, key) }
        return value
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        let index = try index(key)
        guard let value = reader.string(at: index) else { throw columnMismatch(String.self, reader, index, key) }
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
