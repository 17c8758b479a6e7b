/// Proleptic Gregorian calendar arithmetic in UTC, without `Calendar` or
/// `DateFormatter` (both are slow and allocate): days since 1970 to a
/// year, month and day and back, and SQLite's date text.
enum CivilCalendar {
    /// Days from 1970-01-01 to the given date (negative before it).
    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        // Years start in March, so that February's leap day comes last.
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear.floorDivided(by: 400)
        let yearOfEra = shiftedYear - era * 400
        let monthFromMarch = (month + 9) % 12
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The year, month and day `days` after 1970-01-01.
    static func date(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = shifted.floorDivided(by: 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Seconds since 1970 for SQLite date text (see `Date`'s conversion),
    /// or nil.
    static func parse(_ text: String) -> Double? {
        var text = text
        return text.withUTF8 { bytes in
            var scanner = DigitScanner(bytes: bytes)
            guard let year = scanner.number(digits: 4), scanner.skip("-"),
                let month = scanner.number(digits: 2), (1...12).contains(month), scanner.skip("-"),
                let day = scanner.number(digits: 2), (1...daysIn(month: month, year: year)).contains(day)
            else { return nil }
            let days = daysSince1970(year: year, month: month, day: day)
            if scanner.isAtEnd { return Double(days * 86_400) }
            guard scanner.skip(" ") || scanner.skip("T"),
                let hour = scanner.number(digits: 2), hour < 24, scanner.skip(":"),
                let minute = scanner.number(digits: 2), minute < 60
            else { return nil }
            var second: Int64 = 0
            var fraction = 0.0
            if scanner.skip(":") {
                guard let wholeSecond = scanner.number(digits: 2), wholeSecond < 60 else { return nil }
                second = wholeSecond
                if scanner.skip(".") {
                    guard let digits = scanner.fraction() else { return nil }
                    fraction = digits
                }
            }
            // 12:00+02:00 is 10:00 UTC.
            var offsetMinutes: Int64 = 0
            if scanner.skip("Z") || scanner.skip("z") {
                guard scanner.isAtEnd else { return nil }
            } else if !scanner.isAtEnd {
                let sign: Int64
                if scanner.skip("+") {
                    sign = 1
                } else if scanner.skip("-") {
                    sign = -1
                } else {
                    return nil
                }
                // SQLite reads no offset beyond 14:59.
                guard let hours = scanner.number(digits: 2), hours <= 14, scanner.skip(":"),
                    let minutesOfHour = scanner.number(digits: 2), minutesOfHour < 60, scanner.isAtEnd
                else { return nil }
                offsetMinutes = sign * (hours * 60 + minutesOfHour)
            }
            // SQLite reads no instant after 9999-12-31 23:59:59.999, the
            // seconds rounded to the millisecond as it rounds them.
            let minutes = days * 1440 + hour * 60 + minute - offsetMinutes
            let seconds = Double(second) + fraction
            guard minutes * 60_000 + Int64(seconds * 1000 + 0.5) <= 253_402_300_799_999 else { return nil }
            return Double(minutes * 60) + seconds
        }
    }
}

/// Reads ASCII digits and separators from UTF-8 bytes.
private struct DigitScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    var isAtEnd: Bool { position == bytes.count }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard position < bytes.count, bytes[position] == UInt8(ascii: character) else { return false }
        position += 1
        return true
    }

    /// Exactly `digits` digits, as a number.
    mutating func number(digits: Int) -> Int64? {
        guard bytes.count - position >= digits else { return nil }
        var number: Int64 = 0
        for _ in 0..<digits {
            let digit = bytes[position] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            number = number * 10 + Int64(digit)
            position += 1
        }
        return number
    }

    /// One or more digits after a decimal point, as a fraction of one.
    mutating func fraction() -> Double? {
        var nanoseconds: Int64 = 0
        var digitsRead = 0
        while position < bytes.count, case let digit = bytes[position] &- UInt8(ascii: "0"), digit < 10 {
            // Digits beyond the nanosecond cannot change a Date.
            if digitsRead < 9 { nanoseconds = nanoseconds * 10 + Int64(digit) }
            digitsRead += 1
            position += 1
        }
        guard digitsRead > 0 else { return nil }
        for _ in digitsRead..<max(digitsRead, 9) { nanoseconds *= 10 }
        return Double(nanoseconds) / 1e9
    }
}

extension Int64 {
    /// Division rounded toward negative infinity: -1 / 1000 is -1, not 0.
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
