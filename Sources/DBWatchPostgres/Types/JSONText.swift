/// Checks that text is one JSON value (RFC 8259), as PostgreSQL's json
/// and jsonb output always is: the replica embeds the elements of a json
/// array in its JSON without parsing them again.
enum JSONText {
    /// Throws unless `text` is one JSON value, with optional white space
    /// around it. UTF-8 is not checked here.
    static func check(_ text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) {
        let invalid = ConversionFailure(reason: "not JSON")
        let count = text.count
        var index = 0
        // The open containers, innermost last: `{` or `[`. A stack on the
        // heap, not recursion: any depth PostgreSQL accepted checks.
        var containers: [UInt8] = []

        func skipSpace() {
            while index < count {
                switch text[index] {
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
                default: return
                }
            }
        }
        func string() throws(ConversionFailure) {
            guard index < count, text[index] == UInt8(ascii: "\"") else { throw invalid }
            index += 1
            while index < count {
                let byte = text[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return
                case UInt8(ascii: "\\"):
                    guard index < count else { throw invalid }
                    let escape = text[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                        UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        break
                    case UInt8(ascii: "u"):
                        guard index + 4 <= count else { throw invalid }
                        for position in index..<index + 4 where PostgresText.hexDigit(text[position]) == nil {
                            throw invalid
                        }
                        index += 4
                    default:
                        throw invalid
                    }
                case ..<0x20:
                    throw invalid
                default:
                    break
                }
            }
            throw invalid
        }
        func key() throws(ConversionFailure) {
            skipSpace()
            try string()
            skipSpace()
            guard index < count, text[index] == UInt8(ascii: ":") else { throw invalid }
            index += 1
        }
        func literal(_ word: StaticString) throws(ConversionFailure) {
            let end = index + word.utf8CodeUnitCount
            guard end <= count, PostgresText.equals(UnsafeBufferPointer(rebasing: text[index..<end]), word) else {
                throw invalid
            }
            index = end
        }

        while true {
            // A value.
            skipSpace()
            guard index < count else { throw invalid }
            var closed = false
            switch text[index] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let open = text[index]
                index += 1
                skipSpace()
                let close = open == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                if index < count, text[index] == close {
                    index += 1
                    closed = true
                } else {
                    containers.append(open)
                    if open == UInt8(ascii: "{") { try key() }
                }
            case UInt8(ascii: "\""):
                try string()
                closed = true
            case UInt8(ascii: "t"):
                try literal("true")
                closed = true
            case UInt8(ascii: "f"):
                try literal("false")
                closed = true
            case UInt8(ascii: "n"):
                try literal("null")
                closed = true
            default:
                let start = index
                while index < count {
                    switch text[index] {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
                        UInt8(ascii: "e"), UInt8(ascii: "E"):
                        index += 1
                        continue
                    default: break
                    }
                    break
                }
                guard PostgresText.isNumber(UnsafeBufferPointer(rebasing: text[start..<index]), exponent: true) else {
                    throw invalid
                }
                closed = true
            }
            guard closed else { continue }
            // After a value: `,`, the end of containers, or the end.
            while true {
                skipSpace()
                guard let container = containers.last else {
                    guard index == count else { throw invalid }
                    return
                }
                guard index < count else { throw invalid }
                let byte = text[index]
                index += 1
                if byte == UInt8(ascii: ",") {
                    if container == UInt8(ascii: "{") { try key() }
                    break
                }
                guard byte == (container == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")) else {
                    throw invalid
                }
                containers.removeLast()
            }
        }
    }
}
