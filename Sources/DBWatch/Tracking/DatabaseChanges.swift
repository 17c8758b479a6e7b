/// What one table lost, gained or updated in a transaction.
struct TableChange: Sendable {
    /// The columns an update set (`.all` for inserts and deletes).
    var columns: ColumnSet
    /// The rowids changed, or `nil` when unknown (or too many to keep). A
    /// single rowid is kept inline: a one-row write allocates no set.
    var rowIDs: RowSet?

    /// Past this many rowids a table's change counts as "any row".
    static let rowIDLimit = 1024

    init(columns: ColumnSet, rowID: Int64?) {
        self.columns = columns
        self.rowIDs = rowID.map(RowSet.one)
    }

    /// Adds one changed row (`nil`: any row) touching `columns`.
    @inline(__always)
    mutating func record(columns: ColumnSet, rowID: Int64?) {
        if self.columns != .all && columns != self.columns { self.columns = self.columns.union(columns) }
        guard let rowID else {
            rowIDs = nil
            return
        }
        switch rowIDs {
        case nil:
            return
        case .one(let existing):
            if existing != rowID { rowIDs = .many([existing, rowID]) }
        case .many(var set):
            // Drop the stored reference first, so that the set is unique
            // and grows in place instead of being copied for every row.
            rowIDs = nil
            set.insert(rowID)
            rowIDs = set.count > Self.rowIDLimit ? nil : .many(set)
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
///
/// The first table changed is kept inline and the others in a dictionary:
/// most transactions change one table, and then recording and publishing
/// them allocates and hashes nothing.
struct DatabaseChanges: Sendable {
    private var firstTable: TableName?
    private var firstChange = TableChange(columns: .all, rowID: nil)
    private var otherTables: [TableName: TableChange] = [:]
    /// The schema changed (or a change happened that the hooks could not
    /// see): every observation must refetch.
    var affectsEverything = false

    var isEmpty: Bool { firstTable == nil && !affectsEverything }

    /// The change of `table`, if it changed.
    func change(of table: TableName) -> TableChange? {
        if firstTable == table { return firstChange }
        return otherTables[table]
    }

    /// Calls `body` with each changed table and its change.
    func forEachTable(_ body: (TableName, TableChange) -> Void) {
        guard let firstTable else { return }
        body(firstTable, firstChange)
        for (table, change) in otherTables { body(table, change) }
    }

    /// Records a change of `columns` in `table`, of one row (`nil`: any row).
    @inline(__always)
    mutating func insert(_ table: TableName, columns: ColumnSet, rowID: Int64?) {
        if firstTable == nil {
            firstTable = table
            firstChange = TableChange(columns: columns, rowID: rowID)
        } else if firstTable == table {
            firstChange.record(columns: columns, rowID: rowID)
        } else if otherTables[table] == nil {
            otherTables[table] = TableChange(columns: columns, rowID: rowID)
        } else {
            // Mutated in place: copying the change out would copy its rowids for every row.
            otherTables[table]!.record(columns: columns, rowID: rowID)
        }
    }

    /// Whether the changes can modify the result of a query reading `region`.
    func touches(_ region: DatabaseRegion) -> Bool {
        if affectsEverything { return true }
        guard let firstTable else { return false }
        if let read = region.entries[firstTable], firstChange.touches(read) { return true }
        for (table, change) in otherTables {
            if let read = region.entries[table], change.touches(read) {
                return true
            }
        }
        return false
    }
}
