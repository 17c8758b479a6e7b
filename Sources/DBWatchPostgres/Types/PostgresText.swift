import Foundation

/// Why a value's text cannot be converted; ``ColumnMapping`` adds the text
/// and throws ``ValueConversionError``.
struct ConversionFailure: Error {
    /// Why.
    var reason: String
}

/// Readers of PostgreSQL's text output of values (with `DateStyle = ISO`,
/// `TimeZone = UTC`, `extra_float_digits = 3`, `bytea_output = hex`), on
/// raw bytes: no Foundation formatter, no regular expression, no copy
/// before the result.
enum PostgresText {
    /// `Int64` from decimal digits with an optional `-`, as PostgreSQL
    /// writes integers (no `+`, no leading zero), checked for overflow.
    static func integer(_ text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) -> Int64 {
        var index = 0
        let negative = text.first == UInt8(ascii: "-")
        if negative { index = 1 }
        guard index < text.count else { throw ConversionFailure(reason: "not an integer") }
        guard text[index] != UInt8(ascii: "0") || text.count == index + 1 else {
            throw ConversionFailure(reason: "not an integer (leading zero)")
        }
        // Accumulated negatively, so that Int64.min reads too.
        var value: Int64 = 0
        while index < text.count {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { throw ConversionFailure(reason: "not an integer") }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = times10.subtractingReportingOverflow(Int64(digit))
            guard !overflow1, !overflow2 else { throw ConversionFailure(reason: "integer out of the 64-bit range") }
            value = next
            index += 1
        }
        if negative { return value }
        guard value != .min else { throw ConversionFailure(reason: "integer out of the 64-bit range") }
        return -value
    }

    /// Whether `text` is a JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?`,
    /// then `([eE][+-]?[0-9]+)?` when `exponent` allows it. PostgreSQL
    /// writes floats and numerics that way.
    static func isNumber(_ text: UnsafeBufferPointer<UInt8>, exponent: Bool) -> Bool {
        var index = 0
        let count = text.count
        func digits() -> Int {
            let start = index
            while index < count, text[index] &- UInt8(ascii: "0") < 10 { index += 1 }
            return index - start
        }
        if index < count, text[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digits()
        guard integerDigits > 0, integerDigits == 1 || text[integerStart] != UInt8(ascii: "0") else { return false }
        if index < count, text[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        if exponent, index < count, text[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < count, text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return index == count
    }

    /// A float's value: a number, `Infinity` or `-Infinity`. `NaN` throws:
    /// SQLite would store it as NULL.
    static func float(_ text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) -> Double {
        if equals(text, "Infinity") { return .infinity }
        if equals(text, "-Infinity") { return -.infinity }
        if equals(text, "NaN") { throw ConversionFailure(reason: "NaN, which SQLite stores as NULL") }
        guard isNumber(text, exponent: true) else { throw ConversionFailure(reason: "not a float") }
        // A float's text is short: a small string, not allocated.
        guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else {
            throw ConversionFailure(reason: "float out of the 64-bit range")
        }
        return value
    }

    /// Checks a numeric's text, kept as it is: NaN and infinities throw.
    static func checkNumeric(_ text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) {
        guard !isNumber(text, exponent: false) else { return }
        if equals(text, "NaN") || equals(text, "Infinity") || equals(text, "-Infinity") {
            throw ConversionFailure(reason: "numeric NaN or infinity, which has no exact decimal text")
        }
        throw ConversionFailure(reason: "not a numeric")
    }

    /// A bool: `t` or `f` (its output function, which the change feed
    /// uses), or `true` or `false` (its cast to text).
    static func boolean(_ text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) -> Bool {
        if equals(text, "t") || equals(text, "true") { return true }
        if equals(text, "f") || equals(text, "false") { return false }
        throw ConversionFailure(reason: "not a bool (t or f)")
    }

    /// The bytes of a bytea in hex output (`\x00ff`).
    static func bytea(_ text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) -> Data {
        guard isBytea(text) else { throw ConversionFailure(reason: "not a bytea in hex output (\\x...)") }
        var data = Data(count: (text.count - 2) / 2)
        let valid = data.withUnsafeMutableBytes { (output: UnsafeMutableRawBufferPointer) -> Bool in
            var index = 2
            var outputIndex = 0
            while index < text.count {
                guard let high = hexDigit(text[index]), let low = hexDigit(text[index + 1]) else { return false }
                output[outputIndex] = high << 4 | low
                outputIndex += 1
                index += 2
            }
            return true
        }
        guard valid else { throw ConversionFailure(reason: "not a bytea in hex output (\\x...)") }
        return data
    }

    /// Whether `text` starts as a bytea in hex output (`\x`) and has an
    /// even number of digits (which are not checked).
    static func isBytea(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        text.count >= 2 && text[0] == UInt8(ascii: "\\") && text[1] == UInt8(ascii: "x") && text.count % 2 == 0
    }

    /// The value of a hexadecimal digit, either case.
    @inline(__always)
    static func hexDigit(_ byte: UInt8) -> UInt8? {
        if byte &- UInt8(ascii: "0") < 10 { return byte &- UInt8(ascii: "0") }
        let lower = byte | 0x20
        if lower &- UInt8(ascii: "a") < 6 { return lower &- UInt8(ascii: "a") &+ 10 }
        return nil
    }

    /// Checks a uuid's text: 8-4-4-4-12 hexadecimal digits.
    static func checkUUID(_ text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) {
        guard text.count == 36 else { throw ConversionFailure(reason: "not a uuid") }
        for (index, byte) in text.enumerated() {
            let valid =
                index == 8 || index == 13 || index == 18 || index == 23
                ? byte == UInt8(ascii: "-") : hexDigit(byte) != nil
            guard valid else { throw ConversionFailure(reason: "not a uuid") }
        }
    }

    /// Checks a time's text: `HH:MM:SS`, then optionally `.` and 1 to 6
    /// digits (`24:00:00` included, as PostgreSQL allows).
    static func checkTime(_ text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) {
        guard text.count >= 8, text[2] == UInt8(ascii: ":"), text[5] == UInt8(ascii: ":"),
            let hour = number(text, 0, 2), let minute = number(text, 3, 2), let second = number(text, 6, 2),
            hour < 24 && minute < 60 && second < 60 || hour == 24 && minute == 0 && second == 0,
            text.count == 8
                || text[8] == UInt8(ascii: ".") && (10...15).contains(text.count)
                    && number(text, 9, text.count - 9) != nil
        else { throw ConversionFailure(reason: "not a time (HH:MM:SS[.ffffff])") }
    }

    /// Checks a date's text: `YYYY-MM-DD`, a real day of the years 0001 to
    /// 9999. Infinite dates, dates BC and years after 9999 throw.
    static func checkDate(_ text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) {
        try checkFinite(text, "date")
        guard text.count >= 10, let (year, _, _) = calendarDate(text), year > 0 else {
            throw ConversionFailure(reason: "not a date (YYYY-MM-DD)")
        }
        guard text.count == 10 else { throw unsupportedDate(text, at: 10) }
    }

    /// A timestamp's text, `YYYY-MM-DD HH:MM:SS[.ffffff][±HH[:MM[:SS]]]`
    /// (timestamp without an offset is taken as UTC), as milliseconds
    /// since 1970 UTC, rounded half away from zero as `Date.databaseValue`
    /// rounds, and within the years 0000 to 9999 that DBWatch's date text
    /// holds (``writeTimestamp(_:to:)`` writes it). Infinite timestamps,
    /// dates BC and instants after 9999 throw.
    static func timestamp(_ text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) -> Int64 {
        try checkFinite(text, "timestamp")
        let invalid = ConversionFailure(reason: "not a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM])")
        guard text.count >= 19, let (year, month, day) = calendarDate(text), year > 0 else { throw invalid }
        guard text[10] == UInt8(ascii: " ") else { throw unsupportedDate(text, at: 10) }
        guard text[13] == UInt8(ascii: ":"), text[16] == UInt8(ascii: ":"),
            let hour = number(text, 11, 2), let minute = number(text, 14, 2), let second = number(text, 17, 2),
            hour < 24, minute < 60, second < 60
        else { throw invalid }
        var index = 19
        var microseconds: Int64 = 0
        if index < text.count, text[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < text.count, text[index] &- UInt8(ascii: "0") < 10 {
                guard digits < 6 else { throw invalid }
                microseconds = microseconds * 10 + Int64(text[index] &- UInt8(ascii: "0"))
                digits += 1
                index += 1
            }
            guard digits > 0 else { throw invalid }
            for _ in digits..<6 { microseconds *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if index < text.count, text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") {
            let sign: Int64 = text[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            // ±HH, ±HH:MM or ±HH:MM:SS (PostgreSQL's offsets reach 15:59:59).
            guard let hours = number(text, index, 2), hours < 16 else { throw invalid }
            index += 2
            offsetSeconds = hours * 3600
            for unit: Int64 in [60, 1] {
                guard index < text.count, text[index] == UInt8(ascii: ":") else { break }
                guard let part = number(text, index + 1, 2), part < 60 else { throw invalid }
                offsetSeconds += part * unit
                index += 3
            }
            offsetSeconds *= sign
        }
        guard index == text.count else {
            if index < text.count, text[index] == UInt8(ascii: " ") { throw unsupportedDate(text, at: index) }
            throw invalid
        }
        let days = daysSince1970(year: year, month: month, day: day)
        let total = ((days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds) * 1_000_000) + microseconds
        // Rounded half away from zero, as Date.databaseValue rounds.
        var milliseconds = total / 1000
        let rest = total % 1000
        if rest >= 500 { milliseconds += 1 } else if rest <= -500 { milliseconds -= 1 }
        let first = daysSince1970(year: 0, month: 1, day: 1) * 86_400_000
        let end = daysSince1970(year: 10_000, month: 1, day: 1) * 86_400_000
        guard milliseconds >= first, milliseconds < end else {
            throw ConversionFailure(reason: "timestamp outside the years 0000 to 9999, which DBWatch stores as text")
        }
        return milliseconds
    }

    /// The length of DBWatch's date text, `yyyy-MM-dd HH:mm:ss.SSS`.
    static let timestampTextCount = 23

    /// Writes DBWatch's date text of an instant of the years 0000 to 9999
    /// (milliseconds since 1970 UTC) in the first 23 bytes of `buffer`.
    static func writeTimestamp(_ milliseconds: Int64, to buffer: UnsafeMutableBufferPointer<UInt8>) {
        let days = milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds - 86_399_999) / 86_400_000
        let millisecondOfDay = milliseconds - days * 86_400_000
        let (year, month, day) = civilDate(daysSince1970: days)
        var index = 0
        func write(_ value: Int64, _ count: Int, then separator: UInt8?) {
            var remaining = value
            for position in stride(from: index + count - 1, through: index, by: -1) {
                buffer[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remaining % 10)
                remaining /= 10
            }
            index += count
            if let separator {
                buffer[index] = separator
                index += 1
            }
        }
        write(year, 4, then: UInt8(ascii: "-"))
        write(month, 2, then: UInt8(ascii: "-"))
        write(day, 2, then: UInt8(ascii: " "))
        write(millisecondOfDay / 3_600_000, 2, then: UInt8(ascii: ":"))
        write(millisecondOfDay / 60_000 % 60, 2, then: UInt8(ascii: ":"))
        write(millisecondOfDay / 1000 % 60, 2, then: UInt8(ascii: "."))
        write(millisecondOfDay % 1000, 3, then: nil)
    }

    /// Throws for `infinity`, `-infinity` and a year of 5 digits or more.
    private static func checkFinite(_ text: UnsafeBufferPointer<UInt8>, _ type: String) throws(ConversionFailure) {
        if equals(text, "infinity") || equals(text, "-infinity") {
            throw ConversionFailure(reason: "infinite \(type), which has no date text")
        }
        if number(text, 0, 5) != nil {
            throw ConversionFailure(reason: "\(type) after the year 9999, which DBWatch's date text cannot hold")
        }
    }

    /// The error for what follows a date at `index`: ` BC`, or a year of
    /// more than 4 digits.
    private static func unsupportedDate(_ text: UnsafeBufferPointer<UInt8>, at index: Int) -> ConversionFailure {
        if text.count >= 3, text[text.count - 3] == UInt8(ascii: " "), text[text.count - 2] == UInt8(ascii: "B"),
            text[text.count - 1] == UInt8(ascii: "C")
        {
            return ConversionFailure(reason: "date before the year 1 (BC), which DBWatch cannot store as a date")
        }
        return ConversionFailure(reason: "not a date of the years 0001 to 9999 (YYYY-MM-DD)")
    }

    /// Year, month and day of `YYYY-MM-DD` at the start of `text` (at
    /// least 10 bytes), when it is a real day; `nil` otherwise.
    private static func calendarDate(_ text: UnsafeBufferPointer<UInt8>) -> (Int64, Int64, Int64)? {
        guard text[4] == UInt8(ascii: "-"), text[7] == UInt8(ascii: "-"),
            let year = number(text, 0, 4), let month = number(text, 5, 2), let day = number(text, 8, 2),
            (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        return (year, month, day)
    }

    /// The number of days in a month of the proleptic Gregorian calendar.
    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// The decimal number of `count` digits at `start`, `nil` when a byte
    /// there is no digit or the text is too short.
    @inline(__always)
    private static func number(_ text: UnsafeBufferPointer<UInt8>, _ start: Int, _ count: Int) -> Int64? {
        guard start >= 0, count > 0, start + count <= text.count else { return nil }
        var value: Int64 = 0
        for index in start..<start + count {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + Int64(digit)
        }
        return value
    }

    /// Days from 1970-01-01 to a day of the proleptic Gregorian calendar
    /// (Howard Hinnant's `days_from_civil`).
    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The day of the proleptic Gregorian calendar `days` after 1970-01-01
    /// (Howard Hinnant's `civil_from_days`).
    static func civilDate(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Whether `text` is exactly the ASCII `string`.
    @inline(__always)
    static func equals(_ text: UnsafeBufferPointer<UInt8>, _ string: StaticString) -> Bool {
        text.count == string.utf8CodeUnitCount
            && string.withUTF8Buffer { $0.elementsEqual(text) }
    }
}
