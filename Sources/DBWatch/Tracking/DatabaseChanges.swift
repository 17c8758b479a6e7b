/// What one table lost, gained or updated in a transaction.
struct TableChange: Sendable {
    /// The columns an update set (`.all` for inserts and deletes).
    var columns: ColumnSet
    /// The rowids changed, or `nil` when unknown (or too many to keep).
    var rowIDs: Set<Int64>?

    /// Past this many rowids a table's change counts as "any row".
    static let rowIDLimit = 1024

    /// Whether the change can modify what a region reads of the table.
    @inline(__always)
    func touches(columns read: ColumnSet, rowIDs readRows: Set<Int64>?) -> Bool {
        guard read.intersects(columns) else { return false }
        guard let rowIDs, let readRows else { return true }
        return !rowIDs.isDisjoint(with: readRows)
    }
}

/// What one committed transaction changed, as the hooks and the authorizer
/// reported it.
struct DatabaseChanges: Sendable {
    /// Tables changed, with the columns an update touched (`.all` for
    /// inserts and deletes) and the rowids when known.
    var tables: [TableName: TableChange] = [:]
    /// The schema changed (or a change happened that the hooks could not
    /// see): every observation must refetch.
    var affectsEverything = false

    var isEmpty: Bool { tables.isEmpty && !affectsEverything }

    /// Records a change of `columns` in `table`, of the given rows (`nil`: any row).
    mutating func insert(_ table: TableName, columns: ColumnSet, rowIDs: [Int64]?) {
        if var change = tables[table] {
            if change.columns != .all { change.columns = change.columns.union(columns) }
            if let rowIDs, change.rowIDs != nil {
                change.rowIDs!.formUnion(rowIDs)
                if change.rowIDs!.count > TableChange.rowIDLimit { change.rowIDs = nil }
            } else {
                change.rowIDs = nil
            }
            tables[table] = change
        } else {
            tables[table] = TableChange(columns: columns, rowIDs: rowIDs.map(Set.init))
        }
    }

    /// Whether the changes can modify the result of a query reading `region`.
    func touches(_ region: DatabaseRegion) -> Bool {
        if affectsEverything { return true }
        for (table, change) in tables {
            if let read = region.tables[table], change.touches(columns: read, rowIDs: region.rowIDs[table]) {
                return true
            }
        }
        return false
    }
}
