import Foundation

/// URLs are stored as GRDB stores them: their `absoluteString`, as text.
/// `URL`'s own `Decodable` form is a keyed structure, which a text column
/// does not hold; this conversion reads the text.
///
/// ```swift
/// try db.execute(sql: "INSERT INTO link (url) VALUES (?)", arguments: [URL(string: "https://sqlite.org")!])
/// let url = try db.fetchOne(URL.self, sql: "SELECT url FROM link")   // https://sqlite.org
/// ```
extension URL: DatabaseValueConvertible {
    /// `.text(absoluteString)`
    ///
    /// ```swift
    /// URL(string: "https://sqlite.org/lang.html")!.databaseValue   // .text("https://sqlite.org/lang.html")
    /// ```
    public var databaseValue: DatabaseValue { .text(absoluteString) }

    /// A URL from text that `URL(string:)` accepts; `nil` otherwise.
    ///
    /// ```swift
    /// URL.fromDatabaseValue(.text("https://sqlite.org"))   // https://sqlite.org
    /// URL.fromDatabaseValue(.integer(1))                   // nil: not text
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> URL? {
        guard case .text(let text) = value else { return nil }
        return URL(string: text)
    }
}
