import CSQLite

/// The current row of a query, read in place without copying it: what
/// ``FetchableRecord/init(row:)`` receives.
///
/// A view is valid only during the `init(row:)` call that received it; the
/// statement moves to the next row afterwards. A view kept beyond it reads
/// nothing: `decode` and `copy()` throw ``SQLiteError`` `.misuse`, the
/// subscripts and `index(of:)` return `nil`. Typed access throws a
/// `DecodingError` on a missing column, on `NULL` for a non-optional type and
/// on a value of the wrong type, as ``Row`` does.
///
/// ```swift
/// init(row: RowView) throws {
///     id = try row.decode(Int64.self, at: 0)
///     nickname = try row.decode(String?.self, at: "nickname")
/// }
/// ```
public struct RowView {
    let reader: ColumnReader
    /// The reader's view serial while this view is valid.
    let serial: UInt64

    init(reader: ColumnReader, serial: UInt64) {
        self.reader = reader
        self.serial = serial
    }

    /// Whether the view's `init(row:)` is still running.
    private var isValid: Bool { reader.viewSerial == serial }

    /// The number of columns.
    ///
    /// ```swift
    /// let columns = row.count
    /// ```
    public var count: Int { reader.columnCount }

    /// The position of the column named `column` (the exact name first, then
    /// case-insensitively), or `nil`.
    ///
    /// ```swift
    /// if let index = row.index(of: "score") { … }
    /// ```
    public func index(of column: String) -> Int? {
        isValid ? reader.index(of: column) : nil
    }

    /// The value at `index`, or `nil` when the row has no column there.
    ///
    /// ```swift
    /// if case .text(let name)? = row[1] { … }
    /// ```
    public subscript(_ index: Int) -> DatabaseValue? {
        isValid && (0..<reader.columnCount).contains(index) ? reader.value(at: index) : nil
    }

    /// The value of the column named `column`, or `nil` when the row has no
    /// such column.
    ///
    /// ```swift
    /// let score = row["score"]
    /// ```
    public subscript(_ column: String) -> DatabaseValue? {
        index(of: column).map { reader.value(at: $0) }
    }

    /// The value at `index` as `T`.
    ///
    /// ```swift
    /// let id = try row.decode(Int64.self, at: 0)
    /// let bonus = try row.decode(Double?.self, at: 3)
    /// ```
    ///
    /// Inlinable so that the conversion is specialized for `T` in the
    /// caller's module: unspecialized, each call looked up the metadata of
    /// `T?` (a third of the time per column).
    @inlinable
    public func decode<T: DatabaseValueConvertible>(_ type: T.Type, at index: Int) throws -> T {
        // Text read straight into a String, without a DatabaseValue (a
        // check that specialization removes).
        if T.self == String.self, let string = try checkedString(at: index) { return unsafeBitCast(string, to: T.self) }
        let value = try checkedValue(at: index)
        if let converted = T.fromDatabaseValue(value) { return converted }
        throw conversionError(value, to: T.self, at: index, named: nil)
    }

    /// The value of the column named `column` as `T`.
    ///
    /// ```swift
    /// let name = try row.decode(String.self, at: "name")
    /// ```
    @inlinable
    public func decode<T: DatabaseValueConvertible>(_ type: T.Type, at column: String) throws -> T {
        let index = try checkedIndex(of: column)
        if T.self == String.self, let string = try checkedString(at: index) { return unsafeBitCast(string, to: T.self) }
        let value = try checkedValue(at: index)
        if let converted = T.fromDatabaseValue(value) { return converted }
        throw conversionError(value, to: T.self, at: index, named: column)
    }

    /// The value at `index`; throws `keyNotFound` when the row has no
    /// column there.
    @usableFromInline
    func checkedValue(at index: Int) throws -> DatabaseValue {
        guard isValid else { throw RowView.stale }
        guard (0..<reader.columnCount).contains(index) else {
            throw DecodingError.keyNotFound(
                ColumnKey(intValue: index),
                .init(codingPath: [], debugDescription: "no column at index \(index); the row has \(count)"))
        }
        return reader.value(at: index)
    }

    /// The text at `index` as a `String` (repaired when it is not valid
    /// UTF-8, as `String.fromDatabaseValue` reads it), or `nil` when the
    /// value is not text or the row has no column there: ``checkedValue(at:)``
    /// then gives the value or the error.
    @usableFromInline
    func checkedString(at index: Int) throws -> String? {
        guard isValid else { throw RowView.stale }
        guard (0..<reader.columnCount).contains(index) else { return nil }
        return reader.string(at: index)
    }

    /// The position of `column`; throws `keyNotFound` when the row has no
    /// such column.
    @usableFromInline
    func checkedIndex(of column: String) throws -> Int {
        guard isValid else { throw RowView.stale }
        guard let index = index(of: column) else {
            throw DecodingError.keyNotFound(
                ColumnKey(stringValue: column),
                .init(codingPath: [], debugDescription: "no column named \(column)"))
        }
        return index
    }

    /// The error for `value` that does not convert to `type`. The column's
    /// key is made only here: its name is a string built per call.
    @usableFromInline
    func conversionError(_ value: DatabaseValue, to type: Any.Type, at index: Int, named name: String?) -> DecodingError
    {
        DecodingError.conversion(
            value, to: type, column: name.map { ColumnKey(name: $0, index: index) } ?? ColumnKey(intValue: index))
    }

    /// A copy of the row that outlives the view.
    ///
    /// ```swift
    /// let kept: Row = try row.copy()
    /// ```
    public func copy() throws -> Row {
        guard isValid else { throw RowView.stale }
        return reader.copy()
    }

    private static let stale = SQLiteError.misuse(
        "a RowView was used after its init(row:) returned; keep a copy() of the row instead")
}

@available(*, unavailable, message: "a row view belongs to one connection and one thread")
extension RowView: Sendable {}
