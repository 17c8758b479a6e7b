import Foundation

extension KeyedRows {
    /// The result after `changes`, by the rule every client applies:
    ///
    /// 1. remove every key of `deletes`, and every key of an upsert that
    ///    has an index;
    /// 2. insert the rows of the upserts that have an index, in ascending
    ///    index order, each at its index (an upsert without a row keeps the
    ///    row its key had: a move);
    /// 3. replace in place the row of each upsert without an index;
    /// 4. the other rows keep their relative order.
    ///
    /// O(n + m log m) for n rows and m upserts.
    ///
    /// ```swift
    /// let fresh = try previous.applying(KeyedChanges.between(previous, fetched))   // == fetched
    /// ```
    ///
    /// - Parameter changes: Changes computed against this result.
    /// - Returns: The changed result.
    /// - Throws: ``KeyedRowsError`` when the changes do not fit this result:
    ///   ``KeyedRowsError/unknownKey(_:)`` (a delete, in-place update or
    ///   move without a row of a key the result does not have),
    ///   ``KeyedRowsError/keyRepeated(_:)``, ``KeyedRowsError/missingRow(_:)``,
    ///   ``KeyedRowsError/indexOutOfRange(_:)`` or
    ///   ``KeyedRowsError/indexRepeated(_:)``.
    public func applying(_ changes: KeyedChanges) throws(KeyedRowsError) -> KeyedRows {
        if changes.isEmpty { return self }
        var mentioned = Set<Data>(minimumCapacity: changes.deletes.count + changes.upserts.count)
        var removed = [Bool](repeating: false, count: rows.count)
        var replaced: [Int: Data] = [:]
        var inserts: [(index: Int, row: KeyedRow)] = []
        for key in changes.deletes {
            guard mentioned.insert(key).inserted else { throw .keyRepeated(key) }
            guard let position = positions[key] else { throw .unknownKey(key) }
            removed[position] = true
        }
        for upsert in changes.upserts {
            guard mentioned.insert(upsert.key).inserted else { throw .keyRepeated(upsert.key) }
            let position = positions[upsert.key]
            if let index = upsert.index {
                guard index >= 0 else { throw .indexOutOfRange(index) }
                if let position { removed[position] = true }
                guard let row = upsert.row ?? position.map({ rows[$0].row }) else { throw .unknownKey(upsert.key) }
                inserts.append((index, KeyedRow(key: upsert.key, row: row)))
            } else {
                guard let position else { throw .unknownKey(upsert.key) }
                guard let row = upsert.row else { throw .missingRow(upsert.key) }
                replaced[position] = row
            }
        }
        // Stable: `between` emits them sorted already.
        if !zip(inserts, inserts.dropFirst()).allSatisfy({ $0.index < $1.index }) {
            inserts = inserts.enumerated().sorted { ($0.element.index, $0.offset) < ($1.element.index, $1.offset) }
                .map(\.element)
        }
        var result: [KeyedRow] = []
        result.reserveCapacity(rows.count - changes.deletes.count + inserts.count)
        var next = 0
        /// Appends the next row that stays, with its in-place update;
        /// `false` when none is left.
        func appendStaying() -> Bool {
            while next < rows.count && removed[next] { next += 1 }
            guard next < rows.count else { return false }
            var row = rows[next]
            if let replacement = replaced[next] { row.row = replacement }
            result.append(row)
            next += 1
            return true
        }
        for insert in inserts {
            if insert.index < result.count { throw .indexRepeated(insert.index) }
            while result.count < insert.index {
                guard appendStaying() else { throw .indexOutOfRange(insert.index) }
            }
            result.append(insert.row)
        }
        while appendStaying() {}
        return KeyedRows(uniqueRows: result)
    }
}
