import CSQLite
import Foundation

/// One SQLite value: `NULL`, an integer, a real, a text or a blob.
///
/// ```swift
/// let row = try db.fetchOne(sql: "SELECT 1, 'a', NULL")!
/// row[0] == .integer(1)
/// row[1] == .text("a")
/// row[2] == .null
/// ```
///
/// SQLite stores a `Double.nan` as `NULL`: binding `.real(.nan)` and reading
/// it back gives `.null`.
public enum DatabaseValue: Hashable, Sendable, CustomStringConvertible {
    /// `NULL`
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A 64-bit float.
    case real(Double)
    /// UTF-8 text (may contain NUL characters).
    case text(String)
    /// Bytes.
    case blob(Data)

    /// Whether the value is `NULL`.
    ///
    /// ```swift
    /// try db.fetchOne(sql: "SELECT max(score) FROM player")![0].isNull   // true on an empty table
    /// ```
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A SQL-like rendering: `NULL`, `1`, `1.5`, `'text'`, `x'00ff'`.
    ///
    /// ```swift
    /// DatabaseValue.text("O'Brien").description      // "'O''Brien'"
    /// DatabaseValue.blob(Data([0, 255])).description   // "x'00ff'"
    /// ```
    public var description: String {
        switch self {
        case .null: return "NULL"
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .text(let value): return "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let data): return "x'" + data.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }

    /// Reads column `index` of the current row of `statement`.
    ///
    /// One `sqlite3_column_value` call, then the `sqlite3_value_*`
    /// accessors: each `sqlite3_column_*` call does the column lookup and its
    /// error bookkeeping again. Connections are opened `NOMUTEX`, where
    /// SQLite's protected and unprotected values are the same.
    @inline(__always)
    init(statement: OpaquePointer, column index: Int32) {
        let value = sqlite3_column_value(statement, index)
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER:
            self = .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT:
            self = .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            self = .text(String(textOf: value))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_value_blob(value) else {
                self = .blob(Data())
                return
            }
            self = .blob(Data(bytes: bytes, count: Int(sqlite3_value_bytes(value))))
        default:
            self = .null
        }
    }

    /// Binds the value to parameter `index` (1-based) of `statement`.
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        switch self {
        case .null:
            return sqlite3_bind_null(statement, index)
        case .integer(let value):
            return sqlite3_bind_int64(statement, index, value)
        case .real(let value):
            return sqlite3_bind_double(statement, index, value)
        case .text(var value):
            return value.withUTF8 { buffer in
                // A NULL pointer would bind NULL: an empty string needs a real pointer.
                guard let base = buffer.baseAddress, buffer.count > 0 else {
                    return sqlite3_bind_text(statement, index, "", 0, dbwatch_transient())
                }
                return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    sqlite3_bind_text64(
                        statement, index, $0, sqlite3_uint64(buffer.count), dbwatch_transient(), UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let data):
            if data.isEmpty {
                return sqlite3_bind_zeroblob(statement, index, 0)
            }
            return data.withUnsafeBytes { buffer in
                sqlite3_bind_blob64(
                    statement, index, buffer.baseAddress, sqlite3_uint64(buffer.count), dbwatch_transient())
            }
        }
    }
}

extension String {
    /// Reads a text value (from `sqlite3_column_value`), keeping embedded
    /// NUL characters.
    @inline(__always)
    init(textOf value: OpaquePointer?) {
        guard let text = sqlite3_value_text(value) else {
            self = ""
            return
        }
        self = String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
    }
}
