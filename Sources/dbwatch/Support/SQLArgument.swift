import ArgumentParser
import DBWatch

/// One `--arg` value, bound to the next `?` of the SQL.
///
/// A value that reads as a 64-bit integer binds as an `INTEGER`, a decimal
/// number (`1.5`, `-2e3`) as a `REAL`, the word `NULL` (any case) as `NULL`;
/// anything else binds as `TEXT`. Digits beyond the 64-bit range
/// (`99999999999999999999`) are refused: SQLite would bind them as an
/// inexact `REAL` (`1e+20`); write `99999999999999999999.0` for a `REAL`,
/// or quote them for `TEXT`. Single quotes force text and are
/// removed: `--arg "'007'"` binds the text `007`, `--arg "'NULL'"` the text
/// `NULL`.
///
/// ```swift
/// SQLArgument(argument: "42")?.value       // .integer(42)
/// SQLArgument(argument: "'42'")?.value     // .text("42")
/// ```
struct SQLArgument: ExpressibleByArgument, Hashable, Sendable {
    /// The value to bind.
    let value: DatabaseValue

    /// Parses a command-line value; fails only for an integer beyond the
    /// 64-bit range (anything else is at least text).
    init?(argument: String) {
        if argument.count >= 2, argument.hasPrefix("'"), argument.hasSuffix("'") {
            value = .text(String(argument.dropFirst().dropLast()))
        } else if argument.uppercased() == "NULL" {
            value = .null
        } else if let integer = Int64(argument) {
            value = .integer(integer)
        } else if SQLArgument.isInteger(argument) {
            return nil
        } else if SQLArgument.isDecimal(argument), let real = Double(argument), real.isFinite {
            value = .real(real)
        } else {
            value = .text(argument)
        }
    }

    /// Parses `--arg`'s value, as ``init(argument:)``, with a clear error
    /// for an integer beyond the 64-bit range.
    ///
    /// ```swift
    /// try SQLArgument.parse("99999999999999999999")   // throws ValidationError
    /// ```
    static func parse(_ argument: String) throws -> SQLArgument {
        guard let parsed = SQLArgument(argument: argument) else {
            throw ValidationError(
                "--arg \(argument): the integer is beyond the 64-bit range (SQLite would bind it as an inexact REAL); "
                    + "write it with a decimal point (\(argument).0) for a REAL, or in single quotes for TEXT.")
        }
        return parsed
    }

    /// Whether `text` is digits with an optional sign: an integer, whatever its size.
    static func isInteger(_ text: String) -> Bool {
        let digits = text.first == "+" || text.first == "-" ? text.dropFirst() : Substring(text)
        return !digits.isEmpty && digits.allSatisfy(\.isASCIIDigit)
    }

    /// Whether `text` is a plain decimal number: digits with an optional
    /// sign, point and exponent (so `inf`, `nan` and `0x10` stay text).
    static func isDecimal(_ text: String) -> Bool {
        var scalars = Substring(text)
        if scalars.first == "+" || scalars.first == "-" { scalars = scalars.dropFirst() }
        let mantissa = scalars.prefix { $0 != "e" && $0 != "E" }
        let exponent = scalars.dropFirst(mantissa.count)
        let digits = mantissa.filter { $0 != "." }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), mantissa.filter({ $0 == "." }).count <= 1 else {
            return false
        }
        if exponent.isEmpty { return true }
        var rest = exponent.dropFirst()
        if rest.first == "+" || rest.first == "-" { rest = rest.dropFirst() }
        return !rest.isEmpty && rest.allSatisfy(\.isASCIIDigit)
    }

    /// The help text of `--arg`.
    static let help = ArgumentHelp(
        "A value for the next `?` of the SQL (repeat for each).",
        discussion: """
            Integers bind as INTEGER, decimal numbers as REAL, NULL as NULL, anything else as TEXT; \
            single quotes force TEXT: --arg "'007'". An integer beyond the 64-bit range is refused: \
            write 1e20 or 100000000000000000000.0 for a REAL.
            """,
        valueName: "value")
}

extension Character {
    /// `0`…`9`.
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
