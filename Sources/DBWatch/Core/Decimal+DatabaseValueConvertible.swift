import Foundation

/// Decimals are stored as GRDB stores them: as text, which keeps all the
/// digits a `Decimal` holds (38), where a real keeps about 16. They read
/// from that text, from integers, and from reals by their shortest decimal form
/// (`0.1` is `0.1`, not `0.1000000000000000055…`).
///
/// SQL compares and sorts such text as text: `'9.5' > '10'`. Cast it to
/// compare numbers (`CAST(price AS REAL)`), or store amounts as integers
/// (cents) when SQL must compute with them.
///
/// ```swift
/// try db.execute(sql: "INSERT INTO item (price) VALUES (?)", arguments: [Decimal(string: "19.99")!])
/// let total = try db.fetchAll(Decimal.self, sql: "SELECT price FROM item").reduce(0, +)
/// ```
extension Decimal: DatabaseValueConvertible {
    /// The decimal's text, with a dot whatever the locale.
    ///
    /// ```swift
    /// Decimal(string: "19.99")!.databaseValue   // .text("19.99")
    /// ```
    public var databaseValue: DatabaseValue { .text(description) }

    /// A decimal from an integer, a real, or text that is a whole decimal
    /// number (`"-1.5"`, `"2e3"`); `nil` otherwise (`"12abc"`, `"NaN"`).
    ///
    /// ```swift
    /// Decimal.fromDatabaseValue(.real(0.1))      // 0.1
    /// Decimal.fromDatabaseValue(.text("12abc"))  // nil
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Decimal? {
        switch value {
        case .integer(let integer): return Decimal(integer)
        case .real(let real): return real.isFinite ? Decimal(string: "\(real)") : nil
        // Decimal(string:) is nil beyond Decimal's range ("1e999").
        case .text(let text): return isDecimalNumber(text) ? Decimal(string: text) : nil
        case .invalidUTF8Text, .blob, .null: return nil
        }
    }

    /// Whether `text` is a whole decimal number: sign, digits with at most
    /// one dot, then an optional exponent. `Decimal(string:)` alone reads
    /// a number at the start of any text.
    private static func isDecimalNumber(_ text: String) -> Bool {
        var bytes = text.utf8[...]
        if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            bytes = bytes.dropFirst()
        }
        var digits = 0
        var sawDot = false
        while let byte = bytes.first {
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                digits += 1
            } else if byte == UInt8(ascii: "."), !sawDot {
                sawDot = true
            } else {
                break
            }
            bytes = bytes.dropFirst()
        }
        guard digits > 0 else { return false }
        guard let marker = bytes.first else { return true }
        guard marker == UInt8(ascii: "e") || marker == UInt8(ascii: "E") else { return false }
        bytes = bytes.dropFirst()
        if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
        return !bytes.isEmpty && bytes.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
