import Foundation

/// Dates are stored as GRDB stores them: UTC text `"yyyy-MM-dd HH:mm:ss.SSS"`,
/// which sorts in time order and which SQLite's date functions read.
///
/// Reading accepts SQLite's own formats as well as numbers:
/// - text `YYYY-MM-DD`, optionally followed by a space or `T` and `HH:MM`,
///   `HH:MM:SS` or `HH:MM:SS.SSS` (any number of fraction digits), then
///   optionally `Z` or an offset `±HH:MM` (up to ±14:59, as in SQLite);
///   without an offset the time is UTC, as in SQLite;
/// - an integer or a real: seconds since 1970 (`unixepoch()`,
///   `CAST(strftime('%s', …) AS INTEGER)`), as in GRDB. Digits in text
///   are no date: `strftime('%s', …)` alone gives text.
///
/// Anything else converts to `nil`, so decoding it throws a typed error: a
/// time without a date, an impossible day (`2023-02-30`), an instant after
/// 9999-12-31 23:59:59.999 (`9999-12-31 23:00-01:00`, which SQLite refuses
/// too), other text. A `Decodable` property of type `Date` reads its column
/// the same way, instead of `Date`'s own `Decodable` form (seconds since
/// 2001), which would give a wrong date for a Unix timestamp without any
/// error.
///
/// ```swift
/// try db.execute(sql: "INSERT INTO event (at) VALUES (?)", arguments: [Date()])
/// // at = '2026-11-22 21:04:05.123'
/// let last = try db.fetchOne(Date.self, sql: "SELECT max(at) FROM event")
/// ```
extension Date: DatabaseValueConvertible {
    /// UTC text, rounded to the millisecond: `"yyyy-MM-dd HH:mm:ss.SSS"`. A
    /// date outside the years 0000–9999, which that text cannot hold, is
    /// stored as a real: seconds since 1970.
    ///
    /// ```swift
    /// Date(timeIntervalSince1970: 0.25).databaseValue   // .text("1970-01-01 00:00:00.250")
    /// ```
    public var databaseValue: DatabaseValue {
        let seconds = timeIntervalSince1970
        // Rounded, not truncated: 1_700_000_000.123 is a double a little
        // below, and must not be stored as .122.
        let rounded = (seconds * 1000).rounded()
        guard rounded.isFinite, abs(rounded) < 1e15 else { return .real(seconds) }
        let milliseconds = Int64(rounded)
        let days = milliseconds.floorDivided(by: 86_400_000)
        let millisecondOfDay = milliseconds - days * 86_400_000
        let (year, month, day) = CivilCalendar.date(daysSince1970: days)
        guard (0...9999).contains(year) else { return .real(seconds) }
        var text = ""
        text.reserveCapacity(23)
        text.appendDigits(year, count: 4)
        text.append("-")
        text.appendDigits(month, count: 2)
        text.append("-")
        text.appendDigits(day, count: 2)
        text.append(" ")
        text.appendDigits(millisecondOfDay / 3_600_000, count: 2)
        text.append(":")
        text.appendDigits(millisecondOfDay / 60_000 % 60, count: 2)
        text.append(":")
        text.appendDigits(millisecondOfDay / 1000 % 60, count: 2)
        text.append(".")
        text.appendDigits(millisecondOfDay % 1000, count: 3)
        return .text(text)
    }

    /// A date from SQLite date text, or from seconds since 1970; `nil`
    /// for anything else.
    ///
    /// ```swift
    /// Date.fromDatabaseValue(.text("2024-02-29T12:00:00Z"))   // 2024-02-29 12:00 UTC
    /// Date.fromDatabaseValue(.integer(86_400))               // 1970-01-02 00:00 UTC
    /// Date.fromDatabaseValue(.text("12:00"))                 // nil: no date
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Date? {
        switch value {
        case .integer(let seconds): return Date(timeIntervalSince1970: Double(seconds))
        case .real(let seconds): return seconds.isFinite ? Date(timeIntervalSince1970: seconds) : nil
        case .text(let text): return CivilCalendar.parse(text).map(Date.init(timeIntervalSince1970:))
        case .invalidUTF8Text, .blob, .null: return nil
        }
    }
}

extension String {
    /// Appends `value` in decimal, padded with zeros to `count` digits.
    fileprivate mutating func appendDigits(_ value: Int64, count: Int) {
        let digits = String(value)
        if digits.count < count { append(String(repeating: "0", count: count - digits.count)) }
        append(digits)
    }
}
