import Foundation

/// Reads JSON text without converting its values: each value is checked
/// against the JSON grammar and returned as the range of its bytes, so a
/// key or row keeps the exact text it was sent with (numbers included).
///
/// ```swift
/// var scanner = RawJSONScanner(Array(#"[1.50, "a"]"#.utf8))
/// try scanner.value()   // 0..<11, the whole array
/// ```
///
/// Package access: DBWatchClient reads the sync protocol's batches with it.
package struct RawJSONScanner {
    /// The JSON text, UTF-8.
    package let bytes: [UInt8]
    /// Where reading stands.
    package private(set) var offset = 0
    /// How deep arrays and objects may nest.
    static let maximumDepth = 512

    /// A scanner at the start of `bytes`.
    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The error at the current offset.
    package func error(_ reason: String) -> KeyedRowsError {
        .invalidJSON(at: offset, reason)
    }

    /// Skips spaces, tabs and line breaks.
    package mutating func skipWhitespace() {
        while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
    }

    /// Whether the next byte, after whitespace, is `byte`; consumes it if so.
    mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard offset < bytes.count, bytes[offset] == byte else { return false }
        offset += 1
        return true
    }

    /// Consumes `byte` after whitespace, or throws.
    mutating func expect(_ byte: UInt8) throws(KeyedRowsError) {
        guard consume(byte) else { throw error("expected '\(Character(Unicode.Scalar(byte)))'") }
    }

    /// Throws unless only whitespace is left.
    package mutating func expectEnd() throws(KeyedRowsError) {
        skipWhitespace()
        guard offset == bytes.count else { throw error("expected the end of the text") }
    }

    /// Reads the elements of an array, calling `element` at the start of
    /// each (which must read one value).
    package mutating func array(_ element: (inout RawJSONScanner) throws(KeyedRowsError) -> Void) throws(KeyedRowsError)
    {
        try expect(UInt8(ascii: "["))
        if consume(UInt8(ascii: "]")) { return }
        repeat {
            try element(&self)
        } while consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"))
    }

    /// Reads the members of an object, calling `member` with each name
    /// (which must read the member's value).
    package mutating func object(_ member: (String, inout RawJSONScanner) throws(KeyedRowsError) -> Void)
        throws(KeyedRowsError)
    {
        try expect(UInt8(ascii: "{"))
        if consume(UInt8(ascii: "}")) { return }
        repeat {
            skipWhitespace()
            let name = try string()
            try expect(UInt8(ascii: ":"))
            try member(name, &self)
        } while consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"))
    }

    /// Reads a string and returns its text.
    package mutating func string() throws(KeyedRowsError) -> String {
        let range = try value()
        guard bytes[range.lowerBound] == UInt8(ascii: "\"") else { throw error("expected a string") }
        let inner = bytes[(range.lowerBound + 1)..<(range.upperBound - 1)]
        if !inner.contains(UInt8(ascii: "\\")) { return String(decoding: inner, as: UTF8.self) }
        guard
            let text = try? JSONSerialization.jsonObject(with: Data(bytes[range]), options: .fragmentsAllowed)
                as? String
        else { throw error("invalid string") }
        return text
    }

    /// Reads a non-negative integer written without fraction or exponent.
    package mutating func index() throws(KeyedRowsError) -> Int {
        let range = try value()
        let digits = bytes[range]
        guard digits.allSatisfy({ (0x30...0x39).contains($0) }),
            digits.count == 1 || digits.first != 0x30,
            let index = Int(String(decoding: digits, as: UTF8.self))
        else { throw .invalidJSON(at: range.lowerBound, "expected a non-negative integer") }
        return index
    }

    /// Reads one value, after whitespace, and returns the range of its bytes.
    package mutating func value() throws(KeyedRowsError) -> Range<Int> {
        skipWhitespace()
        let start = offset
        try skipValue(depth: 0)
        return start..<offset
    }

    /// Reads one value, after whitespace, and returns its bytes.
    package mutating func rawValue() throws(KeyedRowsError) -> Data {
        let range = try value()
        return Data(bytes[range])
    }

    private mutating func skipValue(depth: Int) throws(KeyedRowsError) {
        guard depth < Self.maximumDepth else { throw error("nested too deeply") }
        skipWhitespace()
        guard offset < bytes.count else { throw error("expected a value") }
        switch bytes[offset] {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "["):
            offset += 1
            if consume(UInt8(ascii: "]")) { return }
            repeat { try skipValue(depth: depth + 1) } while consume(UInt8(ascii: ","))
            try expect(UInt8(ascii: "]"))
        case UInt8(ascii: "{"):
            offset += 1
            if consume(UInt8(ascii: "}")) { return }
            repeat {
                skipWhitespace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw error("expected a name") }
                try skipString()
                try expect(UInt8(ascii: ":"))
                try skipValue(depth: depth + 1)
            } while consume(UInt8(ascii: ","))
            try expect(UInt8(ascii: "}"))
        case UInt8(ascii: "t"): try skipLiteral("true")
        case UInt8(ascii: "f"): try skipLiteral("false")
        case UInt8(ascii: "n"): try skipLiteral("null")
        default: try skipNumber()
        }
    }

    private mutating func skipLiteral(_ literal: String) throws(KeyedRowsError) {
        let expected = Array(literal.utf8)
        guard offset + expected.count <= bytes.count, bytes[offset..<(offset + expected.count)].elementsEqual(expected)
        else { throw error("expected \(literal)") }
        offset += expected.count
    }

    private mutating func skipString() throws(KeyedRowsError) {
        offset += 1
        while offset < bytes.count {
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                return
            case UInt8(ascii: "\\"):
                guard offset + 1 < bytes.count else { break }
                let escaped = bytes[offset + 1]
                if escaped == UInt8(ascii: "u") {
                    let hex = bytes[min(offset + 2, bytes.count)..<min(offset + 6, bytes.count)]
                    guard hex.count == 4, hex.allSatisfy({ Character(Unicode.Scalar($0)).isHexDigit }) else {
                        throw error("invalid \\u escape")
                    }
                    offset += 6
                } else {
                    guard Array(#""\/bfnrt"#.utf8).contains(escaped) else { throw error("invalid escape") }
                    offset += 2
                }
            case 0..<0x20: throw error("control character in a string")
            default: offset += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func skipNumber() throws(KeyedRowsError) {
        let start = offset
        func digits(_ scanner: inout RawJSONScanner) -> Int {
            let first = scanner.offset
            while scanner.offset < scanner.bytes.count, (0x30...0x39).contains(scanner.bytes[scanner.offset]) {
                scanner.offset += 1
            }
            return scanner.offset - first
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        let integer = digits(&self)
        guard integer > 0, integer == 1 || bytes[offset - integer] != 0x30 else {
            offset = start
            throw error("expected a value")
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            guard digits(&self) > 0 else { throw error("expected digits after '.'") }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
                offset += 1
            }
            guard digits(&self) > 0 else { throw error("expected digits in the exponent") }
        }
    }
}
