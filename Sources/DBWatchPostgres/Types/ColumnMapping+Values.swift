import DBWatch
import Foundation

extension ColumnMapping {
    /// The SQLite value of one PostgreSQL value, from its text output (as
    /// the change feed and the initial copy both read it).
    ///
    /// ```swift
    /// let mapping = ColumnMapping(typeOID: 1184)!   // timestamptz
    /// try mapping.databaseValue(fromText: Array("2026-11-24 23:41:24.615767+00".utf8))
    /// // .text("2026-11-24 23:41:24.616")
    /// ```
    ///
    /// - Throws: ``ValueConversionError`` when the text is not the type's
    ///   output, or is a value the mapping refuses (a float or numeric NaN,
    ///   an infinite or BC date, text that is not UTF-8, an array with
    ///   explicit bounds).
    func databaseValue(fromText bytes: [UInt8]) throws(ValueConversionError) -> DatabaseValue {
        do {
            return try bytes.withUnsafeBufferPointer { text throws(ConversionFailure) in
                try kind.databaseValue(fromText: text)
            }
        } catch {
            throw ValueConversionError(text: ValueConversionError.shortened(bytes), reason: error.reason)
        }
    }
}

extension ColumnMapping.Kind {
    /// The SQLite value of a value's text.
    fileprivate func databaseValue(fromText text: UnsafeBufferPointer<UInt8>) throws(ConversionFailure) -> DatabaseValue
    {
        switch self {
        case .integer:
            return .integer(try PostgresText.integer(text))
        case .float:
            return .real(try PostgresText.float(text))
        case .numeric:
            try PostgresText.checkNumeric(text)
            return .text(String(decoding: text, as: UTF8.self))
        case .json:
            try JSONText.check(text)
            fallthrough
        case .text:
            guard let string = String._tryFromUTF8(text) else {
                throw ConversionFailure(reason: "text that is not UTF-8")
            }
            return .text(string)
        case .boolean:
            return .integer(try PostgresText.boolean(text) ? 1 : 0)
        case .bytes:
            return .blob(try PostgresText.bytea(text))
        case .timestamp:
            let milliseconds = try PostgresText.timestamp(text)
            return .text(
                String(unsafeUninitializedCapacity: PostgresText.timestampTextCount) { buffer in
                    PostgresText.writeTimestamp(milliseconds, to: buffer)
                    return PostgresText.timestampTextCount
                })
        case .date:
            try PostgresText.checkDate(text)
            return .text(String(decoding: text, as: UTF8.self))
        case .time:
            try PostgresText.checkTime(text)
            return .text(String(decoding: text, as: UTF8.self))
        case .uuid:
            try PostgresText.checkUUID(text)
            return .text(String(decoding: text, as: UTF8.self))
        case .array(let element):
            return .text(try PostgresArrayText.json(text, element: element))
        }
    }
}

extension ValueConversionError {
    /// At most the first 100 characters of a value's text.
    static func shortened(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes.prefix(400), as: UTF8.self)
        return text.count > 100 ? String(text.prefix(100)) + "…" : text
    }
}
