/// Cuts the bytes of a connection into messages: a type byte, a big-endian
/// `Int32` length that counts itself, and the body. A length below 4 or
/// above ``maximumLength`` is a broken or hostile server: it throws rather
/// than waiting for or allocating that much.
struct MessageFramer {
    /// The longest body accepted: 1 GB, PostgreSQL's own limit on a field.
    static let maximumLength = 1 << 30

    private var buffer: [UInt8] = []
    private var start = 0

    /// Adds bytes read from the connection.
    mutating func append<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message, or `nil` until more bytes come.
    mutating func next() throws(PgOutputParseError) -> (type: UInt8, body: [UInt8])? {
        guard buffer.count - start >= 5 else { return nil }
        var length = 0
        for index in start + 1..<start + 5 { length = length << 8 | Int(buffer[index]) }
        guard length >= 4, length - 4 <= Self.maximumLength else {
            throw PgOutputParseError(message: "a message announces \(length) bytes", offset: start)
        }
        guard buffer.count - start >= 1 + length else { return nil }
        let type = buffer[start]
        let body = Array(buffer[start + 5..<start + 1 + length])
        start += 1 + length
        return (type, body)
    }

    /// Takes one byte that is not a message (the answer to `SSLRequest`).
    mutating func takeByte() -> UInt8? {
        guard start < buffer.count else { return nil }
        defer { start += 1 }
        return buffer[start]
    }

    /// Whether part of a message is waiting for more bytes.
    var hasPartialMessage: Bool { buffer.count > start }
}
