import DBWatch
import Foundation

/// CSV lines (RFC 4180) for `--format csv`.
///
/// `NULL` is an empty unquoted field and empty text is `""`, as in
/// PostgreSQL's `COPY … CSV`, so the two stay distinct; a blob is its
/// base64 text; in text that is not valid UTF-8, each invalid byte is
/// `\xfe`.
///
/// ```swift
/// CSV.line(["a,b", "say \"hi\""])                 // "\"a,b\",\"say \"\"hi\"\"\""
/// CSV.field(.null)                                 // ""
/// CSV.field(.text(""))                             // "\"\""
/// ```
enum CSV {
    /// One line of already-encoded fields, without the line break.
    static func line(_ fields: [String]) -> String {
        fields.joined(separator: ",")
    }

    /// One line of plain strings (a header), quoted where needed.
    static func line(strings: [String]) -> String {
        line(strings.map(quotedIfNeeded))
    }

    /// One line of database values.
    static func line(values: [DatabaseValue]) -> String {
        line(values.map(field))
    }

    /// A database value as a CSV field.
    static func field(_ value: DatabaseValue) -> String {
        switch value {
        case .null: return ""
        case .integer(let integer): return String(integer)
        case .real(let real): return "\(real)"
        case .text(let text): return text.isEmpty ? "\"\"" : quotedIfNeeded(text)
        case .invalidUTF8Text(let bytes): return quotedIfNeeded(CellText.escapingInvalidUTF8(bytes))
        case .blob(let data): return data.base64EncodedString()
        }
    }

    /// `text`, quoted (quotes doubled) when it holds a comma, a quote, a
    /// line break or leading or trailing spaces.
    static func quotedIfNeeded(_ text: String) -> String {
        let needsQuotes =
            text.contains { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }
            || text.first?.isWhitespace == true || text.last?.isWhitespace == true
        guard needsQuotes else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
