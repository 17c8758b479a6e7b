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
///
/// Values compare by what SQLite stores: two texts are equal when their
/// UTF-8 bytes are (`"é"` precomposed and `"e\u{301}"` differ, as they do
/// in SQL), and text whose bytes are not valid UTF-8 is
/// ``invalidUTF8Text(_:)``, which keeps those bytes.
public enum DatabaseValue: Hashable, Sendable, CustomStringConvertible {
    /// `NULL`
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A 64-bit float.
    case real(Double)
    /// UTF-8 text (may contain NUL characters).
    case text(String)
    /// Text whose bytes are not valid UTF-8 (another program stored them,
    /// or SQL such as `CAST(x'ff' AS TEXT)`), kept as stored: it compares
    /// by these bytes and binds them back unchanged. Read as a `String`, it
    /// is repaired (each invalid sequence becomes U+FFFD); read as `Data`,
    /// it gives the bytes.
    ///
    /// ```swift
    /// let value = try db.fetchOne(sql: "SELECT CAST(x'61fe' AS TEXT)")![0]   // .invalidUTF8Text(Data([0x61, 0xfe]))
    /// String.fromDatabaseValue(value)                                       // "a\u{FFFD}"
    /// try db.execute(sql: "UPDATE t SET v = ?", arguments: [value])         // stores 61 FE again
    /// ```
    case invalidUTF8Text(Data)
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

    /// A text value from its UTF-8 bytes: ``text(_:)`` when they are valid
    /// UTF-8, ``invalidUTF8Text(_:)`` otherwise.
    ///
    /// ```swift
    /// DatabaseValue(textBytes: Data("a".utf8))   // .text("a")
    /// DatabaseValue(textBytes: Data([0xff]))     // .invalidUTF8Text(Data([0xff]))
    /// ```
    public init(textBytes bytes: Data) {
        if let text = bytes.withUnsafeBytes({ String._tryFromUTF8($0.bindMemory(to: UInt8.self)) }) {
            self = .text(text)
        } else {
            self = .invalidUTF8Text(bytes)
        }
    }

    /// A SQL-like rendering: `NULL`, `1`, `1.5`, `'text'`, `x'00ff'`, and
    /// text that is not valid UTF-8 as `CAST(x'ff' AS TEXT)`.
    ///
    /// ```swift
    /// DatabaseValue.text("O'Brien").description                   // "'O''Brien'"
    /// DatabaseValue.blob(Data([0, 255])).description                // "x'00ff'"
    /// DatabaseValue.invalidUTF8Text(Data([0xfe])).description       // "CAST(x'fe' AS TEXT)"
    /// ```
    public var description: String {
        switch self {
        case .null: return "NULL"
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .text(let value): return "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
        case .invalidUTF8Text(let bytes): return "CAST(" + DatabaseValue.hexLiteral(bytes) + " AS TEXT)"
        case .blob(let data): return DatabaseValue.hexLiteral(data)
        }
    }

    /// `x'00ff'`
    private static func hexLiteral(_ bytes: Data) -> String {
        "x'" + bytes.map { String(format: "%02x", $0) }.joined() + "'"
    }

    /// Whether the two values are the same stored value: texts compare by
    /// their UTF-8 bytes (not by Unicode canonical equivalence, as `String`
    /// does), a text and a blob are never equal, reals compare as `Double`.
    ///
    /// ```swift
    /// DatabaseValue.text("\u{e9}") == .text("e\u{301}")                     // false: other bytes
    /// DatabaseValue.invalidUTF8Text(Data([0xfe])) == .invalidUTF8Text(Data([0xff]))   // false
    /// ```
    public static func == (lhs: DatabaseValue, rhs: DatabaseValue) -> Bool {
        // One switch, then `if case`: a switch over the tuple (lhs, rhs)
        // copied both values, retains and releases included.
        switch lhs {
        case .null:
            if case .null = rhs { return true }
        case .integer(let left):
            if case .integer(let right) = rhs { return left == right }
        case .real(let left):
            if case .real(let right) = rhs { return left == right }
        case .text(let left):
            if case .text(let right) = rhs { return sameText(left, right) }
            // Only a value built by hand holds valid bytes in .invalidUTF8Text.
            if case .invalidUTF8Text(let right) = rhs { return sameBytes(left.utf8, right) }
        case .invalidUTF8Text(let left):
            if case .invalidUTF8Text(let right) = rhs { return left == right }
            if case .text(let right) = rhs { return sameBytes(right.utf8, left) }
        case .blob(let left):
            if case .blob(let right) = rhs { return left == right }
        }
        return false
    }

    /// Hashes what `==` compares: a text by its UTF-8 bytes.
    ///
    /// ```swift
    /// Set<DatabaseValue>([.text("\u{e9}"), .text("e\u{301}")]).count   // 2
    /// ```
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .integer(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .real(let value):
            hasher.combine(2 as UInt8)
            hasher.combine(value)
        case .text(let text):
            hasher.combine(3 as UInt8)
            DatabaseValue.combine(text.utf8, into: &hasher)
        case .invalidUTF8Text(let bytes):
            hasher.combine(3 as UInt8)
            DatabaseValue.combine(bytes, into: &hasher)
        case .blob(let data):
            hasher.combine(4 as UInt8)
            hasher.combine(data)
        }
    }

    /// Whether two strings hold the same UTF-8 bytes. Two strings with the
    /// same 16-byte representation do (a small string holds its bytes
    /// inline; a large one shares its buffer): that check is as fast as
    /// `String`'s `==`, which compares small strings the same way.
    @inline(__always)
    private static func sameText(_ left: String, _ right: String) -> Bool {
        let identical =
            MemoryLayout<String>.size == 16
            && withUnsafeBytes(of: left) { left in
                withUnsafeBytes(of: right) { right in
                    left.load(as: UInt64.self) == right.load(as: UInt64.self)
                        && left.load(fromByteOffset: 8, as: UInt64.self)
                            == right.load(fromByteOffset: 8, as: UInt64.self)
                }
            }
        return identical || sameBytes(left.utf8, right.utf8)
    }

    /// Whether two byte sequences are equal: one `memcmp` when both are
    /// contiguous (native strings and `Data` are). Never inlined, so that
    /// ``==`` stays small enough to be inlined where arrays of values are
    /// compared (`[Row] == [Row]`, each refetch of an observation).
    @inline(never)
    private static func sameBytes(_ left: some Collection<UInt8>, _ right: some Collection<UInt8>) -> Bool {
        guard left.count == right.count else { return false }
        let same = left.withContiguousStorageIfAvailable { left in
            right.withContiguousStorageIfAvailable { right in
                left.isEmpty || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
            }
        }
        if let same = same ?? nil { return same }
        return left.elementsEqual(right)
    }

    /// Feeds the count and the bytes of `bytes` to `hasher`.
    private static func combine(_ bytes: some Collection<UInt8>, into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        let combined: Void? = bytes.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if combined == nil {
            for byte in bytes { hasher.combine(byte) }
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
            self = DatabaseValue(textOf: value)
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
        case .invalidUTF8Text(let bytes):
            return bytes.withUnsafeBytes { buffer in
                guard let base = buffer.baseAddress, buffer.count > 0 else {
                    return sqlite3_bind_text(statement, index, "", 0, dbwatch_transient())
                }
                return sqlite3_bind_text64(
                    statement, index, base.assumingMemoryBound(to: CChar.self), sqlite3_uint64(buffer.count),
                    dbwatch_transient(), UInt8(SQLITE_UTF8))
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

extension DatabaseValue {
    /// Reads a text value (from `sqlite3_column_value`) as stored, embedded
    /// NUL characters included: ``text(_:)`` when it is valid UTF-8,
    /// ``invalidUTF8Text(_:)`` otherwise.
    @inline(__always)
    init(textOf value: OpaquePointer?) {
        guard let text = sqlite3_value_text(value) else {
            self = .text("")
            return
        }
        self = DatabaseValue(textBytes: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value))))
    }

    /// ``text(_:)`` when `bytes` are valid UTF-8, ``invalidUTF8Text(_:)``
    /// otherwise.
    ///
    /// `String._tryFromUTF8` (a public entry point of the standard library,
    /// which Foundation uses) makes the one validating pass that
    /// `String(decoding:as:)` makes, at the same speed; `String(validating:as:)`
    /// takes a generic path that cost 5 times as long on short text
    /// (58 against 11 ns for 8 bytes). Only invalid text is copied again.
    @inline(__always)
    init(textBytes bytes: UnsafeBufferPointer<UInt8>) {
        if let string = String._tryFromUTF8(bytes) {
            self = .text(string)
        } else {
            self = DatabaseValue.invalidUTF8Text(copying: bytes)
        }
    }

    /// The rare case, out of line: the readers that inline
    /// ``init(textBytes:)`` stay as small as before.
    @inline(never)
    private static func invalidUTF8Text(copying bytes: UnsafeBufferPointer<UInt8>) -> DatabaseValue {
        .invalidUTF8Text(Data(buffer: bytes))
    }
}

extension String {
    /// Reads a text value (from `sqlite3_column_value`), keeping embedded
    /// NUL characters; invalid UTF-8 is repaired (U+FFFD), as
    /// `String.fromDatabaseValue` repairs ``DatabaseValue/invalidUTF8Text(_:)``.
    @inline(__always)
    init(textOf value: OpaquePointer?) {
        guard let text = sqlite3_value_text(value) else {
            self = ""
            return
        }
        self = String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
    }
}
