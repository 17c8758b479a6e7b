import DBWatch

/// How the values of one PostgreSQL type are stored in SQLite: the column's
/// declared type in the replica's table, and the conversion of PostgreSQL's
/// text output of a value (both the change feed and the initial copy read
/// values as text, so one conversion serves both).
///
/// The session that reads values sets `DateStyle = ISO`, `TimeZone = UTC`,
/// `extra_float_digits = 3`, `bytea_output = hex` and `IntervalStyle =
/// postgres`, so the text of a value does not depend on server settings.
struct ColumnMapping: Sendable, Equatable, Codable {
    /// What a value becomes in SQLite.
    enum Kind: Sendable, Equatable, Codable {
        /// int2, int4, int8, oid: INTEGER.
        case integer
        /// float4, float8: REAL.
        case float
        /// numeric: TEXT, the exact decimal digits.
        case numeric
        /// text, varchar, bpchar, name, char, enum labels: TEXT.
        case text
        /// bool: INTEGER 1 or 0.
        case boolean
        /// bytea: BLOB.
        case bytes
        /// timestamptz, timestamp (taken as UTC): TEXT as DBWatch stores a
        /// `Date`, `yyyy-MM-dd HH:mm:ss.SSS` in UTC.
        case timestamp
        /// date: TEXT `yyyy-MM-dd`.
        case date
        /// time: TEXT `HH:mm:ss[.ffffff]`.
        case time
        /// json, jsonb: TEXT.
        case json
        /// uuid: TEXT, lower case.
        case uuid
        /// An array of a mapped element type: TEXT, a JSON array (nested
        /// for several dimensions).
        indirect case array(of: Kind)
    }

    /// What a value becomes.
    var kind: Kind

    /// The PostgreSQL type's OID.
    var typeOID: UInt32
}

/// A PostgreSQL value whose text the mapping cannot store faithfully (a
/// float NaN, an infinite timestamp, text that is not the type's output).
struct ValueConversionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The value's text as PostgreSQL wrote it (at most 100 characters).
    var text: String
    /// Why it cannot be stored.
    var reason: String

    var description: String { "cannot store \(text): \(reason)" }
}
