/// One fetched row: values by position and by column name.
///
/// Typed access throws a `DecodingError` on a missing column, on `NULL` for
/// a non-optional type, and on a value of the wrong type: never a silent
/// `nil`, never a crash.
///
/// ```swift
/// let row = try db.fetchOne(sql: "SELECT id, name, score FROM player")!
/// let name = try row.decode(String.self, at: "name")
/// let score = try row.decode(Int?.self, at: 2)
/// let raw: DatabaseValue = row[0]
/// ```
public struct Row: Hashable, Sendable, CustomStringConvertible {
    /// The column names, in order.
    ///
    /// ```swift
    /// try db.fetchOne(sql: "SELECT id, name AS player FROM player")!.columnNames   // ["id", "player"]
    /// ```
    public let columnNames: [String]
    /// The values, in column order.
    ///
    /// ```swift
    /// Row(["id": 1, "name": "Arthur"]).values   // [.integer(1), .text("Arthur")]
    /// ```
    public let values: [DatabaseValue]

    /// A row built by hand: `Row(["id": 1, "name": "Arthur"])` keeps the order given.
    ///
    /// ```swift
    /// let row = Row(["id": 1, "name": "Arthur", "team_id": nil])   // team_id is .null
    /// ```
    public init(_ pairs: KeyValuePairs<String, (any DatabaseValueConvertible)?>) {
        self.columnNames = pairs.map(\.key)
        self.values = pairs.map { $0.value?.databaseValue ?? .null }
    }

    init(columnNames: [String], values: [DatabaseValue]) {
        self.columnNames = columnNames
        self.values = values
    }

    /// The number of columns.
    ///
    /// ```swift
    /// Row(["id": 1, "name": "Arthur"]).count   // 2
    /// ```
    public var count: Int { values.count }

    /// The value at `index`; traps on an index out of range, like an array.
    ///
    /// ```swift
    /// Row(["id": 1, "name": "Arthur"])[1]   // .text("Arthur")
    /// ```
    public subscript(_ index: Int) -> DatabaseValue { values[index] }

    /// The value of the column named `column` (an exact match first, else the
    /// first case-insensitive one), or `nil` when the row has no such column.
    ///
    /// ```swift
    /// let row = Row(["id": 1, "name": "Arthur"])
    /// row["NAME"]   // .text("Arthur"); row["age"] is nil
    /// ```
    public subscript(_ column: String) -> DatabaseValue? {
        index(of: column).map { values[$0] }
    }

    /// The position of the column named `column` (an exact match first, else
    /// the first case-insensitive one).
    ///
    /// ```swift
    /// Row(["id": 1, "name": "Arthur"]).index(of: "Name")   // 1
    /// ```
    public func index(of column: String) -> Int? {
        if let exact = columnNames.firstIndex(of: column) { return exact }
        let lowercased = column.lowercased()
        return columnNames.firstIndex { $0.lowercased() == lowercased }
    }

    /// The value at `index` as `T`.
    ///
    /// ```swift
    /// let id = try row.decode(Int64.self, at: 0)
    /// ```
    public func decode<T: DatabaseValueConvertible>(_ type: T.Type, at index: Int) throws -> T {
        guard values.indices.contains(index) else {
            throw DecodingError.keyNotFound(
                ColumnKey(intValue: index),
                .init(codingPath: [], debugDescription: "no column at index \(index); the row has \(values.count)"))
        }
        return try Row.convert(values[index], to: T.self, column: ColumnKey(intValue: index))
    }

    /// The value of column `column` as `T`.
    ///
    /// ```swift
    /// let name = try row.decode(String.self, at: "name")
    /// ```
    public func decode<T: DatabaseValueConvertible>(_ type: T.Type, at column: String) throws -> T {
        guard let index = index(of: column) else {
            throw DecodingError.keyNotFound(
                ColumnKey(stringValue: column),
                .init(codingPath: [], debugDescription: "no column named \(column); columns: \(columnNames)"))
        }
        return try Row.convert(values[index], to: T.self, column: ColumnKey(stringValue: column))
    }

    /// The whole row decoded as a `Decodable` type, columns matching property names.
    ///
    /// ```swift
    /// let player = try row.decode(Player.self)
    /// ```
    ///
    /// A single value (`Int`, `Date`, `UUID` … any
    /// ``DatabaseValueConvertible`` type) is the first column, converted as
    /// the fetch methods convert it: not by the type's own `Decodable` form
    /// (a `Date`'s counts seconds from 2001).
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let record = T.self as? any FetchableRecord.Type {
            return try ColumnReader(row: self).withView { try record.init(row: $0) } as! T
        }
        if let convertible = T.self as? any DatabaseValueConvertible.Type {
            guard let value = values.first else {
                throw DecodingError.valueNotFound(
                    T.self, .init(codingPath: [], debugDescription: "the row has no column"))
            }
            return try value.converted(to: T.self, by: convertible, column: ColumnKey(name: columnNames[0], index: 0))
        }
        return try T(from: ColumnDecoder(reader: ColumnReader(row: self)))
    }

    /// The whole row as a ``FetchableRecord``, read by its `init(row:)`.
    ///
    /// ```swift
    /// let rows = try db.fetchAll(sql: "SELECT name, score FROM player")
    /// let ranked = try rows.map { try $0.decode(Ranked.self) }
    /// ```
    public func decode<T: FetchableRecord>(_ type: T.Type) throws -> T {
        try ColumnReader(row: self).withView(T.init(row:))
    }

    /// The whole row as a type that is both `Decodable` and
    /// ``FetchableRecord``: read by `init(row:)`, as the fetch methods do.
    ///
    /// ```swift
    /// let player = try row.decode(Player.self)   // Player: Codable, FetchableRecord
    /// ```
    public func decode<T: Decodable & FetchableRecord>(_ type: T.Type) throws -> T {
        try ColumnReader(row: self).withView(T.init(row:))
    }

    static func convert<T: DatabaseValueConvertible>(_ value: DatabaseValue, to type: T.Type, column: ColumnKey) throws
        -> T
    {
        if let converted = T.fromDatabaseValue(value) { return converted }
        throw DecodingError.conversion(value, to: T.self, column: column)
    }

    /// `[id:1 name:'Arthur']`
    ///
    /// ```swift
    /// Row(["id": 1, "name": "Arthur"]).description   // "[id:1 name:'Arthur']"
    /// ```
    public var description: String {
        "[" + zip(columnNames, values).map { "\($0):\($1)" }.joined(separator: " ") + "]"
    }
}

extension DatabaseValue {
    var typeName: String {
        switch self {
        case .null: return "NULL"
        case .integer: return "INTEGER"
        case .real: return "REAL"
        case .text, .invalidUTF8Text: return "TEXT"
        case .blob: return "BLOB"
        }
    }
}

/// A coding key naming a column, for decoding errors.
struct ColumnKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = "column \(intValue)"
        self.intValue = intValue
    }

    /// The column at `index`, named `name` in errors.
    init(name: String, index: Int) {
        self.stringValue = name
        self.intValue = index
    }
}

extension DatabaseValue {
    /// This value as `T` through `convertible` (`T` itself, seen as a
    /// ``DatabaseValueConvertible``), or the `DecodingError` that names
    /// `column`.
    @inline(__always)
    func converted<T>(
        to type: T.Type, by convertible: any DatabaseValueConvertible.Type, column: @autoclosure () -> any CodingKey
    ) throws -> T {
        if let result = convertible.fromDatabaseValue(self) { return result as! T }
        throw DecodingError.conversion(self, to: T.self, column: column())
    }
}

extension DecodingError {
    /// The error for a database value that does not convert to `type`:
    /// `valueNotFound` for `NULL`, `typeMismatch` otherwise.
    static func conversion(_ value: DatabaseValue, to type: Any.Type, column: any CodingKey) -> DecodingError {
        let context = DecodingError.Context(
            codingPath: [column],
            debugDescription: "cannot decode \(type) from \(value.typeName) in column \(column.stringValue)")
        return value.isNull ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }
}
