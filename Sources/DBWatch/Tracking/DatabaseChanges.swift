/// What one table lost, gained or updated in a transaction.
struct TableChange: Sendable {
    /// The columns an update set (`.all` for inserts and deletes).
    var columns: ColumnSet
    /// The rowids changed, or `nil` when unknown (or too many to keep).
    var rowIDs: Set<Int64>?

    /// Past this many rowids a table's change counts as "any row".
    static let rowIDLimit = 1024

    /// Adds one changed row (`nil`: any row) touching `columns`.
    @inline(__always)
    mutating func record(columns: ColumnSet, rowID: Int64?) {
        if self.columns != .all && columns != self.columns { self.columns = self.columns.union(columns) }
        guard rowIDs != nil else { return }
        if let rowID {
            rowIDs!.insert(rowID)
            if rowIDs!.count > Self.rowIDLimit { rowIDs = nil }
        } else {
            rowIDs = nil
        }
    }

    /// Whether the change can modify what a region reads of the table.
    @inline(__always)
    func touches(_ read: TableRegion) -> Bool {
        guard read.columns.intersects(columns) else { return false }
        guard let rowIDs, let readRows = read.rows else { return true }
        return readRows.intersects(rowIDs)
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

    /// Records a change of `columns` in `table`, of one row (`nil`: any row).
    @inline(__always)
    mutating func insert(_ table: TableName, columns: ColumnSet, rowID: Int64?) {
        if tables[table] == nil {
            tables[table] = TableChange(columns: columns, rowIDs: rowID.map { [$0] })
        } else {
            // Mutated in place: copying the change out would copy its rowids for every row.
            tables[table]!.record(columns: columns, rowID: rowID)
        }
    }

    /// Whether the changes can modify the result of a query reading `region`.
    func touches(_ region: DatabaseRegion) -> Bool {
        if affectsEverything { return true }
        for (table, change) in tables {
            if let read = region.entries[table], change.touches(read) {
                return true
            }
        }
        return false
    }
}
