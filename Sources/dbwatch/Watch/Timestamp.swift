import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Times as `dbwatch` prints them.
///
/// ```swift
/// Timestamp.iso8601(Date(timeIntervalSince1970: 0))   // "1970-01-01T00:00:00.000Z"
/// Timestamp.clock(Date())                             // "14:03:27" (local time)
/// ```
enum Timestamp {
    /// ISO 8601 in UTC with milliseconds: `2025-01-31T09:12:45.123Z`.
    static func iso8601(_ date: Date) -> String {
        let (seconds, milliseconds) = split(date)
        var time = seconds
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), milliseconds)
    }

    /// The local wall-clock time: `14:03:27`.
    static func clock(_ date: Date) -> String {
        var time = split(date).seconds
        var parts = tm()
        localtime_r(&time, &parts)
        return String(format: "%02d:%02d:%02d", Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    private static func split(_ date: Date) -> (seconds: time_t, milliseconds: Int) {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        return (time_t(seconds), Int(milliseconds - seconds * 1000))
    }
}
