import Foundation

/// An ordered result whose rows have a key, unique in the result: what
/// ``KeyedChanges`` are computed between and applied to.
///
/// ```swift
/// let rows = try KeyedRows([
///     KeyedRow(key: Data("1".utf8), row: Data(#"[1,"Arthur",100]"#.utf8)),
///     KeyedRow(key: Data("2".utf8), row: Data(#"[2,"Barbara",90]"#.utf8)),
/// ])
/// rows.count   // 2
/// ```
public struct KeyedRows: Sendable, Equatable {
    /// The rows, in the result's order.
    ///
    /// ```swift
    /// rows.rows.map(\.key)   // the keys in order
    /// ```
    public let rows: [KeyedRow]
    /// The position of each key in `rows`.
    let positions: [Data: Int]

    /// A result of `rows`, in this order.
    ///
    /// ```swift
    /// do {
    ///     let rows = try KeyedRows(fetched)
    /// } catch let error as KeyedRowsError where error == .duplicateKey(key) {
    ///     // the declared key is not unique (a join): send whole values
    /// }
    /// ```
    ///
    /// - Parameter rows: The rows in order.
    /// - Throws: ``KeyedRowsError/duplicateKey(_:)`` when two rows have
    ///   the same key.
    public init(_ rows: [KeyedRow]) throws(KeyedRowsError) {
        var positions = [Data: Int](minimumCapacity: rows.count)
        for (position, row) in rows.enumerated() {
            if positions.updateValue(position, forKey: row.key) != nil {
                throw .duplicateKey(row.key)
            }
        }
        self.rows = rows
        self.positions = positions
    }

    /// A result whose keys are known to be unique (built by
    /// ``applying(_:)``).
    init(uniqueRows rows: [KeyedRow]) {
        var positions = [Data: Int](minimumCapacity: rows.count)
        for (position, row) in rows.enumerated() {
            positions[row.key] = position
        }
        self.rows = rows
        self.positions = positions
    }

    /// The number of rows.
    ///
    /// ```swift
    /// try KeyedRows([]).count   // 0
    /// ```
    public var count: Int { rows.count }

    /// The row of `key`, or `nil` when the result has no such key.
    ///
    /// ```swift
    /// rows.row(forKey: Data("1".utf8))   // the JSON of row 1
    /// ```
    ///
    /// - Parameter key: The key's canonical JSON bytes.
    public func row(forKey key: Data) -> Data? {
        positions[key].map { rows[$0].row }
    }

    /// Two results are equal when they have the same rows in the same order.
    public static func == (lhs: KeyedRows, rhs: KeyedRows) -> Bool {
        lhs.rows == rhs.rows
    }
}
