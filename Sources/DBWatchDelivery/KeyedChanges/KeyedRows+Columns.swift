import Foundation

extension KeyedRows {
    /// The rows of a result of columns (`dbwatch serve`'s), keyed by some
    /// of its columns. Each cell is given as its JSON; a row's JSON is the
    /// array of its cells, `[c1,c2,…]`, and its key the key column's cell,
    /// or the array of the key columns' cells, in the order of `key`, for
    /// a composite key. Cells are copied as they are, so numbers keep the
    /// exact text of the whole value's JSON.
    ///
    /// ```swift
    /// let rows = try KeyedRows(
    ///     columns: ["id", "name"], rows: [[Data("1".utf8), Data(#""Arthur""#.utf8)]], key: ["id"])
    /// rows.rows[0].key   // 1
    /// rows.rows[0].row   // [1,"Arthur"]
    /// ```
    ///
    /// - Parameters:
    ///   - columns: The column names, in order.
    ///   - rows: The rows, each with the JSON of one cell per column.
    ///   - key: The names of the key columns, one or more.
    /// - Throws: ``KeyedRowsError/unknownKeyColumn(_:)`` when a key column
    ///   is not in `columns`, ``KeyedRowsError/duplicateKey(_:)`` when two
    ///   rows have the same key.
    public init(columns: [String], rows: [[Data]], key: [String]) throws(KeyedRowsError) {
        var keyPositions: [Int] = []
        for name in key {
            guard let position = columns.firstIndex(of: name) else { throw .unknownKeyColumn(name) }
            keyPositions.append(position)
        }
        var keyedRows: [KeyedRow] = []
        keyedRows.reserveCapacity(rows.count)
        for cells in rows {
            precondition(cells.count == columns.count, "a row has one cell per column")
            keyedRows.append(KeyedRow(key: Self.key(of: cells, at: keyPositions), row: Self.array(cells)))
        }
        try self.init(keyedRows)
    }

    /// The key: the one key cell, or the array of them.
    private static func key(of cells: [Data], at positions: [Int]) -> Data {
        if positions.count == 1 { return cells[positions[0]] }
        return array(positions.map { cells[$0] })
    }

    /// `[e1,e2,…]`.
    private static func array(_ elements: [Data]) -> Data {
        var json: [UInt8] = []
        json.reserveCapacity(elements.reduce(2) { $0 + $1.count + 1 })
        json.append(UInt8(ascii: "["))
        for (position, element) in elements.enumerated() {
            if position > 0 { json.append(UInt8(ascii: ",")) }
            json.append(contentsOf: element)
        }
        json.append(UInt8(ascii: "]"))
        return Data(json)
    }
}
