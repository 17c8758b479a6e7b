import Foundation

extension DatabaseValue {
    /// `value` as JSON text, for a column that a `Decodable` property which
    /// is itself a structure (an array, a nested struct, a dictionary)
    /// reads. The JSON is written as GRDB writes it (keys sorted, dates as
    /// milliseconds since 1970, data as base64), so that such columns of a
    /// database written by GRDB read the same; only `/` is not escaped.
    ///
    /// Throws `EncodingError` for a value JSON cannot hold (`Double.nan`).
    ///
    /// ```swift
    /// struct Profile: Decodable { var name: String; var tags: [String] }
    /// try db.execute(
    ///     sql: "INSERT INTO profile (name, tags) VALUES (?, ?)",
    ///     arguments: ["Arthur", try DatabaseValue.json(["admin", "ops"])])   // tags = '["admin","ops"]'
    /// let profile = try db.fetchOne(Profile.self, sql: "SELECT name, tags FROM profile")
    /// ```
    public static func json(_ value: some Encodable) throws -> DatabaseValue {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.dataEncodingStrategy = .base64
        encoder.nonConformingFloatEncodingStrategy = .throw
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return .text(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// The decoder of JSON columns, matching ``json(_:)``.
    static func jsonDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        decoder.dataDecodingStrategy = .base64
        decoder.nonConformingFloatDecodingStrategy = .throw
        return decoder
    }
}
