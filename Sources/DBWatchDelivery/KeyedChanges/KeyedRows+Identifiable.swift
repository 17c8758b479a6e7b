import DBWatch
import Foundation

extension KeyedRows {
    /// The rows of a collection of `Identifiable` elements, in order: the
    /// key of an element is the JSON of its `id`, its row the JSON of the
    /// element, both encoded with sorted keys so that equal elements give
    /// equal bytes.
    ///
    /// ```swift
    /// struct Player: Identifiable, Encodable { var id: Int64; var name: String; var score: Int }
    /// let rows = try KeyedRows(identifying: players)   // keys 1, 2, …; rows {"id":1,"name":…,"score":…}
    /// ```
    ///
    /// - Parameter elements: The elements, in the result's order.
    /// - Throws: The encoder's `EncodingError`, or
    ///   ``KeyedRowsError/duplicateKey(_:)`` when two elements have the
    ///   same `id`.
    public init<Elements: Sequence>(identifying elements: Elements) throws
    where Elements.Element: Identifiable & Encodable, Elements.Element.ID: Encodable {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var rows: [KeyedRow] = []
        rows.reserveCapacity(elements.underestimatedCount)
        for element in elements {
            rows.append(KeyedRow(key: try encoder.encode(element.id), row: try encoder.encode(element)))
        }
        try self.init(rows)
    }
}

extension Queryable
where
    Value: RandomAccessCollection, Value.Element: Identifiable & Encodable,
    Value.Element.ID: Encodable
{
    /// A value of this request as keyed rows, keyed by its elements' `id`
    /// (see ``KeyedRows/init(identifying:)``): what keyed changes are
    /// computed between.
    ///
    /// ```swift
    /// let rows = try Leaderboard.keyedRows(of: value)
    /// let changes = KeyedChanges.between(previousRows, rows)
    /// ```
    ///
    /// - Parameter value: A value the request fetched.
    /// - Throws: The encoder's `EncodingError`, or
    ///   ``KeyedRowsError/duplicateKey(_:)``.
    public static func keyedRows(of value: Value) throws -> KeyedRows {
        try KeyedRows(identifying: value)
    }
}
