/// The messages the replica sends on a replication connection, as bytes
/// (PostgreSQL's "Message Formats").
enum FrontendMessage {
    /// `SSLRequest`: asks the server whether it speaks TLS.
    static let sslRequest: [UInt8] = [0, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F]

    /// The startup message, protocol 3.0, with `parameters` (`user`,
    /// `database`, `replication`, …).
    static func startup(_ parameters: [(String, String)]) -> [UInt8] {
        var body: [UInt8] = []
        append(Int32(196_608), to: &body)
        for (name, value) in parameters {
            appendString(name, to: &body)
            appendString(value, to: &body)
        }
        body.append(0)
        var message: [UInt8] = []
        append(Int32(body.count + 4), to: &message)
        return message + body
    }

    /// `PasswordMessage` with a password or an MD5 hash.
    static func password(_ text: String) -> [UInt8] {
        var body: [UInt8] = []
        appendString(text, to: &body)
        return message("p", body)
    }

    /// `SASLInitialResponse`: the mechanism and the client's first message.
    static func saslInitialResponse(mechanism: String, data: [UInt8]) -> [UInt8] {
        var body: [UInt8] = []
        appendString(mechanism, to: &body)
        append(Int32(data.count), to: &body)
        return message("p", body + data)
    }

    /// `SASLResponse`: the client's next message.
    static func saslResponse(_ data: [UInt8]) -> [UInt8] { message("p", data) }

    /// `Query`: a simple query.
    static func query(_ sql: String) -> [UInt8] {
        var body: [UInt8] = []
        appendString(sql, to: &body)
        return message("Q", body)
    }

    /// `CopyData` holding `data`.
    static func copyData(_ data: [UInt8]) -> [UInt8] { message("d", data) }

    /// `Terminate`: the client leaves.
    static let terminate: [UInt8] = message("X", [])

    /// A message of `type` with `body`, its length in front.
    static func message(_ type: Character, _ body: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [type.asciiValue ?? 0]
        append(Int32(body.count + 4), to: &bytes)
        return bytes + body
    }

    /// `value` big-endian.
    static func append<Integer: FixedWidthInteger>(_ value: Integer, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// `text` in UTF-8 and a zero byte.
    static func appendString(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: text.utf8)
        bytes.append(0)
    }
}
