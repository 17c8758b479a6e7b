/// Reads the fields of one `pgoutput` message in order: big-endian
/// integers, NUL-terminated UTF-8 strings and counted bytes. Every read
/// checks what is left and throws ``PgOutputParseError`` with the offset
/// where the field starts.
struct PgOutputReader {
    /// The message.
    let bytes: [UInt8]
    /// The offset of the next field.
    private(set) var offset: Int

    /// A reader at the start of `bytes`.
    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
    }

    /// How many bytes are left.
    var remaining: Int { bytes.count - offset }

    /// Throws unless `count` more bytes are left.
    private func require(_ count: Int, for field: String) throws(PgOutputParseError) {
        guard count <= remaining else {
            throw PgOutputParseError(
                message: "truncated: \(field) needs \(count) bytes, \(remaining) left", offset: offset)
        }
    }

    /// An unsigned byte (`Int8` in the documentation, a tag or flags).
    mutating func readByte(_ field: String) throws(PgOutputParseError) -> UInt8 {
        try require(1, for: field)
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A big-endian `Int16`.
    mutating func readInt16(_ field: String) throws(PgOutputParseError) -> Int16 {
        Int16(truncatingIfNeeded: try readBigEndian(2, field))
    }

    /// A big-endian `Int32`.
    mutating func readInt32(_ field: String) throws(PgOutputParseError) -> Int32 {
        Int32(truncatingIfNeeded: try readBigEndian(4, field))
    }

    /// A big-endian `Int32` read as unsigned (an OID, a transaction id).
    mutating func readUInt32(_ field: String) throws(PgOutputParseError) -> UInt32 {
        UInt32(truncatingIfNeeded: try readBigEndian(4, field))
    }

    /// A big-endian `Int64`.
    mutating func readInt64(_ field: String) throws(PgOutputParseError) -> Int64 {
        Int64(bitPattern: try readBigEndian(8, field))
    }

    /// A big-endian `Int64` read as a log position.
    mutating func readPosition(_ field: String) throws(PgOutputParseError) -> LogSequenceNumber {
        LogSequenceNumber(rawValue: try readBigEndian(8, field))
    }

    /// `count` bytes, big-endian, as one unsigned number.
    private mutating func readBigEndian(_ count: Int, _ field: String) throws(PgOutputParseError) -> UInt64 {
        try require(count, for: field)
        var value: UInt64 = 0
        for index in offset..<offset + count {
            value = value << 8 | UInt64(bytes[index])
        }
        offset += count
        return value
    }

    /// A NUL-terminated UTF-8 string (the NUL is read, not returned).
    mutating func readString(_ field: String) throws(PgOutputParseError) -> String {
        guard let end = bytes[offset...].firstIndex(of: 0) else {
            throw PgOutputParseError(message: "truncated: \(field) has no terminating NUL", offset: offset)
        }
        let string = bytes.withUnsafeBufferPointer { buffer in
            String._tryFromUTF8(UnsafeBufferPointer(rebasing: buffer[offset..<end]))
        }
        guard let string else {
            throw PgOutputParseError(message: "\(field) is not valid UTF-8", offset: offset)
        }
        offset = end + 1
        return string
    }

    /// `count` bytes.
    mutating func readBytes(_ count: Int, _ field: String) throws(PgOutputParseError) -> [UInt8] {
        try require(count, for: field)
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Throws unless every byte was read.
    func requireEnd() throws(PgOutputParseError) {
        guard remaining == 0 else {
            throw PgOutputParseError(message: "\(remaining) bytes after the end of the message", offset: offset)
        }
    }
}
