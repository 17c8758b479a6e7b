import DBWatch
import Foundation

/// A JSON value built by `dbwatch` for `--format json` and `ndjson`,
/// rendered on one line or pretty-printed, with object keys in the order
/// given.
///
/// ```swift
/// JSON.object([("seq", .number("1")), ("rows", .array([]))]).rendered()   // {"seq":1,"rows":[]}
/// JSON(DatabaseValue.blob(Data([0, 1])))                               // {"base64":"AAE="}
/// ```
enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number, already written as JSON.
    case number(String)
    case string(String)
    case array([JSON])
    case object([Member])

    /// One member of an object.
    struct Member: Sendable, Equatable {
        var key: String
        var value: JSON
    }

    /// An object from key-value pairs, in order.
    static func object(_ pairs: KeyValuePairs<String, JSON>) -> JSON {
        .object(pairs.map { Member(key: $0.key, value: $0.value) })
    }

    /// An integer.
    static func integer(_ value: some BinaryInteger) -> JSON { .number(String(value)) }

    /// A database value: `NULL` is `null`, integers and reals are numbers
    /// (an infinite real is `1e999` or `-1e999`, which JSON parsers read
    /// as infinity), text is a string, a blob is `{"base64": "…"}`, and
    /// text that is not valid UTF-8 (which a JSON string cannot hold) is
    /// `{"text_base64": "…"}`, its bytes as stored.
    init(_ value: DatabaseValue) {
        switch value {
        case .null: self = .null
        case .integer(let integer): self = .number(String(integer))
        case .real(let real):
            if real.isNaN {
                self = .null
            } else if real.isInfinite {
                self = .number(real > 0 ? "1e999" : "-1e999")
            } else {
                self = .number("\(real)")
            }
        case .text(let text): self = .string(text)
        case .invalidUTF8Text(let bytes): self = .object(["text_base64": .string(bytes.base64EncodedString())])
        case .blob(let data): self = .object(["base64": .string(data.base64EncodedString())])
        }
    }

    /// The JSON text: one line, or indented by two spaces when `pretty`.
    func rendered(pretty: Bool = false) -> String {
        var output = ""
        write(to: &output, pretty: pretty, indent: 0)
        return output
    }

    private var isScalar: Bool {
        switch self {
        case .array, .object: return false
        default: return true
        }
    }

    /// Scalars, and objects of scalars (a blob's `{"base64": …}`), stay on
    /// one line when pretty-printed.
    private var isInline: Bool {
        switch self {
        case .array: return false
        case .object(let members): return members.allSatisfy(\.value.isScalar)
        default: return true
        }
    }

    private func write(to output: inout String, pretty: Bool, indent: Int, inline: Bool = false) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .number(let text): output += text
        case .string(let text): output += JSON.quoted(text)
        case .array(let elements):
            // A row (an array of inline values) stays on one line even when pretty.
            let multiline = pretty && !elements.allSatisfy(\.isInline)
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += multiline ? "," : (pretty ? ", " : ",") }
                if multiline { output += "\n" + String(repeating: "  ", count: indent + 1) }
                element.write(to: &output, pretty: pretty, indent: indent + 1, inline: !multiline)
            }
            if multiline && !elements.isEmpty { output += "\n" + String(repeating: "  ", count: indent) }
            output += "]"
        case .object(let members):
            let multiline = pretty && !(inline && isInline)
            output += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { output += multiline || !pretty ? "," : ", " }
                if multiline { output += "\n" + String(repeating: "  ", count: indent + 1) }
                output += JSON.quoted(member.key) + (pretty ? ": " : ":")
                member.value.write(to: &output, pretty: pretty, indent: indent + 1)
            }
            if multiline && !members.isEmpty { output += "\n" + String(repeating: "  ", count: indent) }
            output += "}"
        }
    }

    /// `text` as a JSON string literal: quotes, backslashes and control
    /// characters escaped; other characters as they are (UTF-8).
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _
            where scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
