/// The single-value container of ``ColumnDecoder``: reads the column at
/// ``index`` (the first one, or the column of a nested property).
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
            throw columnMismatch(T.self, reader, index, columnKey)
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
            throw columnMismatch(Double.self, reader, index, columnKey)
        }
        return value
    }

    func decode(_ type: Float.Type) throws -> Float {
        guard let value = reader.float(at: index) else {
            throw columnMismatch(Float.self, reader, index, columnKey)
        }
        return value
    }

    func decode(_ type: String.Type) throws -> String {
        guard let value = reader.string(at: index) else {
            throw columnMismatch(String.self, reader, index, columnKey)
        }
        return value
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeColumn(T.self, reader: reader, index: index, key: columnKey)
    }
}
