/// Reading JSON text into ``JSON``, numbers kept as written: a served value
/// says `1` for an integer and `1.0` for a real, and `watch` of a served
/// query shows them as a local `watch` would.
///
/// ```swift
/// try JSON.parse(Array(#"{"rows":[[1,2.5,"a"]]}"#.utf8))
/// ```
extension JSON {
    /// Text that is not one JSON value; `offset` is the byte where reading
    /// stopped.
    struct ParseError: Error, CustomStringConvertible {
        let offset: Int
        var description: String { "not JSON (at byte \(offset))" }
    }

    /// The one JSON value of `bytes` (UTF-8), with white space around it.
    ///
    /// - Throws: ``ParseError`` for anything else, also for nesting deeper
    ///   than 256 levels.
    static func parse(_ bytes: [UInt8]) throws -> JSON {
        var reader = Reader(bytes: bytes)
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.offset == bytes.count else { throw ParseError(offset: reader.offset) }
        return value
    }

    /// The member `key` of an object, or `nil`.
    subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func skipSpace() {
            while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
        }

        mutating func value(depth: Int) throws -> JSON {
            guard depth <= 256 else { throw ParseError(offset: offset) }
            skipSpace()
            guard offset < bytes.count else { throw ParseError(offset: offset) }
            switch bytes[offset] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default: return .number(try number())
            }
        }

        private mutating func literal(_ word: String, _ value: JSON) throws -> JSON {
            let word = Array(word.utf8)
            guard bytes.count - offset >= word.count, Array(bytes[offset..<offset + word.count]) == word else {
                throw ParseError(offset: offset)
            }
            offset += word.count
            return value
        }

        private mutating func expect(_ byte: UInt8) throws {
            skipSpace()
            guard offset < bytes.count, bytes[offset] == byte else { throw ParseError(offset: offset) }
            offset += 1
        }

        /// Whether the next byte (after white space) is `byte`; consumes it.
        private mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard offset < bytes.count, bytes[offset] == byte else { return false }
            offset += 1
            return true
        }

        private mutating func object(depth: Int) throws -> JSON {
            try expect(UInt8(ascii: "{"))
            var members: [Member] = []
            if take(UInt8(ascii: "}")) { return .object(members) }
            repeat {
                skipSpace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else {
                    throw ParseError(offset: offset)
                }
                let key = try string()
                try expect(UInt8(ascii: ":"))
                members.append(Member(key: key, value: try value(depth: depth + 1)))
            } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "}"))
            return .object(members)
        }

        private mutating func array(depth: Int) throws -> JSON {
            try expect(UInt8(ascii: "["))
            var elements: [JSON] = []
            if take(UInt8(ascii: "]")) { return .array(elements) }
            repeat {
                elements.append(try value(depth: depth + 1))
            } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "]"))
            return .array(elements)
        }

        /// A number's text, checked against JSON's grammar.
        private mutating func number() throws -> String {
            let start = offset
            func digits() -> Int {
                let from = offset
                while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) {
                    offset += 1
                }
                return offset - from
            }
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard digits() > 0 else { throw ParseError(offset: offset) }
            if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
                offset += 1
                guard digits() > 0 else { throw ParseError(offset: offset) }
            }
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
                offset += 1
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
                    offset += 1
                }
                guard digits() > 0 else { throw ParseError(offset: offset) }
            }
            return String(decoding: bytes[start..<offset], as: UTF8.self)
        }

        private mutating func string() throws -> String {
            offset += 1  // the opening quote
            var scalars = String.UnicodeScalarView()
            var run = offset
            func flush(upTo end: Int) {
                scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars)
            }
            while offset < bytes.count {
                let byte = bytes[offset]
                switch byte {
                case UInt8(ascii: "\""):
                    flush(upTo: offset)
                    offset += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    flush(upTo: offset)
                    offset += 1
                    scalars.append(try escape())
                    run = offset
                case 0..<0x20:
                    throw ParseError(offset: offset)
                default:
                    offset += 1
                }
            }
            throw ParseError(offset: offset)
        }

        /// The character after a backslash (and, for `\u`, its hex digits
        /// and a low surrogate's).
        private mutating func escape() throws -> Unicode.Scalar {
            guard offset < bytes.count else { throw ParseError(offset: offset) }
            let byte = bytes[offset]
            offset += 1
            switch byte {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                let unit = try hexUnit()
                if (0xD800..<0xDC00).contains(unit), bytes.count - offset >= 6, bytes[offset] == UInt8(ascii: "\\"),
                    bytes[offset + 1] == UInt8(ascii: "u")
                {
                    offset += 2
                    let low = try hexUnit()
                    guard (0xDC00..<0xE000).contains(low) else { throw ParseError(offset: offset) }
                    return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)) ?? "\u{FFFD}"
                }
                return Unicode.Scalar(unit) ?? "\u{FFFD}"
            default:
                throw ParseError(offset: offset - 1)
            }
        }

        private mutating func hexUnit() throws -> UInt32 {
            guard bytes.count - offset >= 4 else { throw ParseError(offset: offset) }
            var unit: UInt32 = 0
            for byte in bytes[offset..<offset + 4] {
                guard let digit = Character(Unicode.Scalar(byte)).hexDigitValue else {
                    throw ParseError(offset: offset)
                }
                unit = unit << 4 | UInt32(digit)
            }
            offset += 4
            return unit
        }
    }
}
