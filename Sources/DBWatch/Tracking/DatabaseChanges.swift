/// What one committed transaction changed, as the hooks and the authorizer
/// reported it.
struct DatabaseChanges: Sendable {
    /// Tables changed, with the columns an update touched (`.all` for
    /// inserts and deletes).
    var tables: [TableName: ColumnSet] = [:]
    /// The schema changed (or a change happened that the hooks could not
    /// see): every observation must refetch.
    var affectsEverything = false

    var isEmpty: Bool { tables.isEmpty && !affectsEverything }

    mutating func insert(_ table: TableName, columns: ColumnSet) {
        if let existing = tables[table] {
            if existing != .all { tables[table] = existing.union(columns) }
        } else {
            tables[table] = columns
        }
    }

    /// Whether the changes can modify the result of a query reading `region`.
    func touches(_ region: DatabaseRegion) -> Bool {
        if affectsEverything { return true }
        if tables.count <= region.tables.count {
            for (table, columns) in tables {
                if let read = region.tables[table], read.intersects(columns) { return true }
            }
        } else {
            for (table, read) in region.tables {
                if let columns = tables[table], read.intersects(columns) { return true }
            }
        }
        return false
    }
}
