/// Converts PostgreSQL's text output of an array (`{1,2,NULL}`,
/// `{"a b","c\"d"}`, `{{1,2},{3,4}}`) to a compact JSON array, each element
/// converted by its kind: numbers as JSON numbers, bools as `true` and
/// `false`, NULL as `null`, json embedded as JSON, anything else as a JSON
/// string (timestamps as DBWatch stores dates, bytea as lower-case hex
/// digits without `\x`).
enum PostgresArrayText {
    /// PostgreSQL's limit on an array's dimensions (`MAXDIM`).
    static let maximumDimensions = 6

    /// The JSON array of an array's text, one pass over its bytes.
    static func json(_ text: UnsafeBufferPointer<UInt8>, element: ColumnMapping.Kind) throws(ConversionFailure)
        -> String
    {
        if case .array = element { throw ConversionFailure(reason: "array of an array kind") }
        let invalid = ConversionFailure(reason: "not an array ({...})")
        guard let first = text.first else { throw invalid }
        guard first != UInt8(ascii: "[") else {
            throw ConversionFailure(
                reason: "array with explicit bounds ([lower:upper]=...), whose positions a JSON array cannot keep")
        }
        guard first == UInt8(ascii: "{") else { throw invalid }
        var output: [UInt8] = []
        output.reserveCapacity(text.count + 2)
        var scratch: [UInt8] = []
        var index = 0
        var depth = 0
        // Two bits per depth: 0 nothing yet, 1 elements, 2 sub-arrays. A
        // level holds one or the other, as PostgreSQL requires.
        var contents: UInt32 = 0
        func mark(_ content: UInt32) throws(ConversionFailure) {
            let shift = UInt32(depth * 2)
            let current = contents >> shift & 3
            guard current == 0 || current == content else {
                throw ConversionFailure(reason: "array mixing elements and sub-arrays at one level")
            }
            contents |= content << shift
        }
        while true {
            // At the start of an item: a sub-array or an element.
            guard index < text.count else { throw invalid }
            if text[index] == UInt8(ascii: "{") {
                if depth > 0 { try mark(2) }
                guard depth < maximumDimensions else {
                    throw ConversionFailure(reason: "array of more than \(maximumDimensions) dimensions")
                }
                depth += 1
                contents &= ~(3 << UInt32(depth * 2))
                index += 1
                output.append(UInt8(ascii: "["))
                guard index < text.count, text[index] == UInt8(ascii: "}") else { continue }
                // An empty array: ends below.
            } else {
                guard depth > 0 else { throw invalid }
                try mark(1)
                try appendElement(text, at: &index, element, &output, &scratch)
                guard index < text.count else { throw invalid }
            }
            // After an item: `,`, or `}` closing one array or more.
            while true {
                let separator = text[index]
                index += 1
                if separator == UInt8(ascii: ",") {
                    guard depth > 0 else { throw invalid }
                    output.append(UInt8(ascii: ","))
                    break
                }
                guard separator == UInt8(ascii: "}") else { throw invalid }
                output.append(UInt8(ascii: "]"))
                depth -= 1
                if depth == 0 {
                    guard index == text.count else { throw invalid }
                    guard let string = output.withUnsafeBufferPointer({ String._tryFromUTF8($0) }) else {
                        throw ConversionFailure(reason: "text that is not UTF-8")
                    }
                    return string
                }
                guard index < text.count else { throw invalid }
            }
        }
    }

    /// Reads the element at `index` (quoted or not) and writes its JSON,
    /// leaving `index` after it.
    private static func appendElement(
        _ text: UnsafeBufferPointer<UInt8>, at index: inout Int, _ kind: ColumnMapping.Kind,
        _ output: inout [UInt8], _ scratch: inout [UInt8]
    ) throws(ConversionFailure) {
        if text[index] == UInt8(ascii: "\"") {
            index += 1
            let start = index
            var escaped = false
            while index < text.count, text[index] != UInt8(ascii: "\"") {
                if text[index] == UInt8(ascii: "\\") {
                    escaped = true
                    index += 1
                }
                index += 1
            }
            guard index < text.count else {
                throw ConversionFailure(reason: "array with an unterminated quoted element")
            }
            let end = index
            index += 1
            guard escaped else {
                try appendJSON(UnsafeBufferPointer(rebasing: text[start..<end]), kind, &output)
                return
            }
            scratch.removeAll(keepingCapacity: true)
            var position = start
            while position < end {
                if text[position] == UInt8(ascii: "\\") { position += 1 }
                scratch.append(text[position])
                position += 1
            }
            var failure: ConversionFailure?
            scratch.withUnsafeBufferPointer { value in
                do throws(ConversionFailure) {
                    try appendJSON(value, kind, &output)
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            return
        }
        let start = index
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") { break }
            guard byte != UInt8(ascii: "{"), byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"),
                byte != UInt8(ascii: " ")
            else { throw ConversionFailure(reason: "array with an invalid unquoted element") }
            index += 1
        }
        let value = UnsafeBufferPointer(rebasing: text[start..<index])
        guard !value.isEmpty else { throw ConversionFailure(reason: "array with an empty unquoted element") }
        // An unquoted NULL, in any case, is NULL; "NULL" quoted is text.
        if value.count == 4, value[0] | 0x20 == UInt8(ascii: "n"), value[1] | 0x20 == UInt8(ascii: "u"),
            value[2] | 0x20 == UInt8(ascii: "l"), value[3] | 0x20 == UInt8(ascii: "l")
        {
            output.append(contentsOf: "null".utf8)
            return
        }
        try appendJSON(value, kind, &output)
    }

    /// Writes the JSON of one element's text.
    private static func appendJSON(
        _ value: UnsafeBufferPointer<UInt8>, _ kind: ColumnMapping.Kind, _ output: inout [UInt8]
    ) throws(ConversionFailure) {
        switch kind {
        case .integer:
            _ = try PostgresText.integer(value)
            output.append(contentsOf: value)
        case .float:
            if PostgresText.equals(value, "Infinity") || PostgresText.equals(value, "-Infinity") {
                throw ConversionFailure(reason: "float infinity in an array, which JSON cannot hold")
            }
            _ = try PostgresText.float(value)
            output.append(contentsOf: value)
        case .numeric:
            try PostgresText.checkNumeric(value)
            output.append(contentsOf: value)
        case .boolean:
            output.append(contentsOf: try PostgresText.boolean(value) ? "true".utf8 : "false".utf8)
        case .bytes:
            guard PostgresText.isBytea(value) else {
                throw ConversionFailure(reason: "not a bytea in hex output (\\x...)")
            }
            output.append(UInt8(ascii: "\""))
            for byte in value.dropFirst(2) {
                guard PostgresText.hexDigit(byte) != nil else {
                    throw ConversionFailure(reason: "not a bytea in hex output (\\x...)")
                }
                // Lower case: a digit is unchanged, a letter loses its case bit.
                output.append(byte | 0x20)
            }
            output.append(UInt8(ascii: "\""))
        case .timestamp:
            let milliseconds = try PostgresText.timestamp(value)
            output.append(UInt8(ascii: "\""))
            let start = output.count
            output.append(contentsOf: repeatElement(0, count: PostgresText.timestampTextCount))
            output.withUnsafeMutableBufferPointer { buffer in
                PostgresText.writeTimestamp(milliseconds, to: UnsafeMutableBufferPointer(rebasing: buffer[start...]))
            }
            output.append(UInt8(ascii: "\""))
        case .date:
            try PostgresText.checkDate(value)
            appendQuoted(value, &output)
        case .time:
            try PostgresText.checkTime(value)
            appendQuoted(value, &output)
        case .uuid:
            try PostgresText.checkUUID(value)
            appendQuoted(value, &output)
        case .text:
            appendJSONString(value, &output)
        case .json:
            try JSONText.check(value)
            output.append(contentsOf: value)
        case .array:
            throw ConversionFailure(reason: "array of an array kind")
        }
    }

    /// Writes ASCII text that needs no escaping between quotes.
    private static func appendQuoted(_ value: UnsafeBufferPointer<UInt8>, _ output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        output.append(contentsOf: value)
        output.append(UInt8(ascii: "\""))
    }

    /// Writes text as a JSON string: `"` and `\` escaped, control
    /// characters as `\n`, `\t`, ... or `\u00XX`; other bytes as they are.
    static func appendJSONString(_ value: UnsafeBufferPointer<UInt8>, _ output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in value {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                output.append(UInt8(ascii: "\\"))
                output.append(byte)
            case 0x20...:
                output.append(byte)
            case UInt8(ascii: "\n"):
                output.append(contentsOf: "\\n".utf8)
            case UInt8(ascii: "\r"):
                output.append(contentsOf: "\\r".utf8)
            case UInt8(ascii: "\t"):
                output.append(contentsOf: "\\t".utf8)
            case 0x08:
                output.append(contentsOf: "\\b".utf8)
            case 0x0C:
                output.append(contentsOf: "\\f".utf8)
            default:
                let digits: [UInt8] = Array("0123456789abcdef".utf8)
                output.append(contentsOf: "\\u00".utf8)
                output.append(digits[Int(byte >> 4)])
                output.append(digits[Int(byte & 15)])
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
