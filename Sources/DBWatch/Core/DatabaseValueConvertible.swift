import CSQLite
import Foundation

/// A Swift type that converts to and from a single ``DatabaseValue``: usable
/// as a statement argument and as a fetched single value or struct property.
///
/// ```swift
/// struct Email: DatabaseValueConvertible {
///     var address: String
///     var databaseValue: DatabaseValue { .text(address) }
///     static func fromDatabaseValue(_ value: DatabaseValue) -> Email? {
///         guard case .text(let text) = value else { return nil }
///         return Email(address: text)
///     }
/// }
/// try db.execute(sql: "INSERT INTO user (email) VALUES (?)", arguments: [Email(address: "a@b.c")])
/// ```
public protocol DatabaseValueConvertible: Sendable {
    /// The value stored in the database.
    var databaseValue: DatabaseValue { get }
    /// The Swift value for a database value, or `nil` when it does not
    /// convert (the caller reports a typed error).
    static func fromDatabaseValue(_ value: DatabaseValue) -> Self?
}

extension DatabaseValue: DatabaseValueConvertible {
    /// The value itself.
    ///
    /// ```swift
    /// DatabaseValue.text("Arthur").databaseValue   // .text("Arthur")
    /// ```
    public var databaseValue: DatabaseValue { self }
    /// The value itself; never fails.
    ///
    /// ```swift
    /// DatabaseValue.fromDatabaseValue(.null)   // .some(.null): never nil
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> DatabaseValue? { value }
}

extension Int64: DatabaseValueConvertible {
    /// `.integer(self)`
    ///
    /// ```swift
    /// Int64(42).databaseValue   // .integer(42)
    /// ```
    public var databaseValue: DatabaseValue { .integer(self) }
    /// An integer, or a real with an exact integer value.
    ///
    /// ```swift
    /// Int64.fromDatabaseValue(.real(2.0))   // 2; .real(2.5) gives nil
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Int64? {
        switch value {
        case .integer(let int): return int
        case .real(let double): return Int64(exactly: double)
        default: return nil
        }
    }
}

extension BinaryInteger where Self: DatabaseValueConvertible {
    /// `.integer(Int64(self))`; values above `Int64.max` are not representable.
    ///
    /// ```swift
    /// Int32(7).databaseValue   // .integer(7)
    /// ```
    public var databaseValue: DatabaseValue { .integer(Int64(truncatingIfNeeded: self)) }
    /// An integer (or an exact real) that fits the type.
    ///
    /// ```swift
    /// Int8.fromDatabaseValue(.integer(300))   // nil: beyond Int8
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Self? {
        Int64.fromDatabaseValue(value).flatMap { Self(exactly: $0) }
    }
}

extension Int: DatabaseValueConvertible {}
extension Int8: DatabaseValueConvertible {}
extension Int16: DatabaseValueConvertible {}
extension Int32: DatabaseValueConvertible {}
extension UInt8: DatabaseValueConvertible {}
extension UInt16: DatabaseValueConvertible {}
extension UInt32: DatabaseValueConvertible {}

extension Double: DatabaseValueConvertible {
    /// `.real(self)`. SQLite stores `.nan` as `NULL`.
    ///
    /// ```swift
    /// 1.5.databaseValue   // .real(1.5)
    /// ```
    public var databaseValue: DatabaseValue { .real(self) }
    /// A real or an integer.
    ///
    /// ```swift
    /// Double.fromDatabaseValue(.integer(3))   // 3.0
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Double? {
        switch value {
        case .real(let double): return double
        case .integer(let int): return Double(int)
        default: return nil
        }
    }
}

extension Float: DatabaseValueConvertible {
    /// `.real(Double(self))`
    ///
    /// ```swift
    /// Float(0.5).databaseValue   // .real(0.5)
    /// ```
    public var databaseValue: DatabaseValue { .real(Double(self)) }
    /// A real or an integer, narrowed to `Float`; nil when a finite value
    /// is beyond `Float`'s range (it would become infinity).
    ///
    /// ```swift
    /// Float.fromDatabaseValue(.real(1e300))   // nil: beyond Float's range
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Float? {
        guard let double = Double.fromDatabaseValue(value) else { return nil }
        let float = Float(double)
        return float.isInfinite && double.isFinite ? nil : float
    }
}

extension Bool: DatabaseValueConvertible {
    /// `.integer(1)` or `.integer(0)`
    ///
    /// ```swift
    /// true.databaseValue   // .integer(1)
    /// ```
    public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
    /// An integer, or a real with an exact integer value (as for `Int64`,
    /// and as a `Bool` property of a `Decodable` struct reads it): zero is
    /// `false`, anything else `true`.
    ///
    /// ```swift
    /// Bool.fromDatabaseValue(.integer(2))   // true; .real(1.0) true; .real(0.5) and .text("true") give nil
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Bool? {
        Int64.fromDatabaseValue(value).map { $0 != 0 }
    }
}

extension String: DatabaseValueConvertible {
    /// `.text(self)`
    ///
    /// ```swift
    /// "Arthur".databaseValue   // .text("Arthur")
    /// ```
    public var databaseValue: DatabaseValue { .text(self) }
    /// Text only: a number is not silently turned into a string. Text that
    /// is not valid UTF-8 reads repaired, each invalid sequence as U+FFFD
    /// (a `String` cannot hold it; `Data` and `DatabaseValue` keep the bytes).
    ///
    /// ```swift
    /// String.fromDatabaseValue(.integer(1))                         // nil: not text
    /// String.fromDatabaseValue(.invalidUTF8Text(Data([0x61, 0xff])))   // "a\u{FFFD}"
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> String? {
        switch value {
        case .text(let text): return text
        case .invalidUTF8Text(let bytes): return String(decoding: bytes, as: UTF8.self)
        default: return nil
        }
    }
}

extension Data: DatabaseValueConvertible {
    /// `.blob(self)`
    ///
    /// ```swift
    /// Data([0xff]).databaseValue   // .blob(Data([0xff]))
    /// ```
    public var databaseValue: DatabaseValue { .blob(self) }
    /// A blob, or the bytes of a text as stored (valid UTF-8 or not).
    ///
    /// ```swift
    /// Data.fromDatabaseValue(.text("ab"))                   // Data("ab".utf8)
    /// Data.fromDatabaseValue(.invalidUTF8Text(Data([0xfe])))   // Data([0xfe])
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Data? {
        switch value {
        case .blob(let data): return data
        case .text(let text): return Data(text.utf8)
        case .invalidUTF8Text(let bytes): return bytes
        default: return nil
        }
    }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    /// The wrapped value, or `.null`.
    ///
    /// ```swift
    /// Int?.none.databaseValue   // .null
    /// ```
    public var databaseValue: DatabaseValue { self?.databaseValue ?? .null }
    /// `.some(nil)` for `NULL`, the wrapped conversion otherwise.
    ///
    /// ```swift
    /// Int?.fromDatabaseValue(.null)   // .some(nil); .text("a") gives nil
    /// ```
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Wrapped?? {
        if value.isNull { return .some(nil) }
        return Wrapped.fromDatabaseValue(value).map { .some($0) }
    }
}
