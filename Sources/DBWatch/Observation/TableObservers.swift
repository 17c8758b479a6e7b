/// The observations that read one table, indexed by the rowids they read:
/// a commit that changes a few rows visits the observations of those rows
/// and of every row, not the observations of other single rows.
///
/// With 10,000 observations of one row each (`WHERE id = ?`), a one-row
/// write then costs the same as with one observation.
struct TableObservers {
    /// The observations that read every row (or rows the authorizer could
    /// not pin down).
    private var everyRow: [ObjectIdentifier: TableRegion] = [:]
    /// The observations that read some rows, by each rowid they read.
    private var byRowID: [Int64: [ObjectIdentifier: TableRegion]] = [:]
    /// The observations that read some rows: what ``remove(_:)`` unindexes,
    /// and what a change of unknown rows visits.
    private var someRows: [ObjectIdentifier: TableRegion] = [:]

    var isEmpty: Bool { everyRow.isEmpty && someRows.isEmpty }

    /// Indexes `read` for the observation `id`, replacing what it read before.
    mutating func insert(_ id: ObjectIdentifier, read: TableRegion) {
        remove(id)
        guard let rows = read.rows else {
            everyRow[id] = read
            return
        }
        someRows[id] = read
        switch rows {
        case .one(let rowID): byRowID[rowID, default: [:]][id] = read
        case .many(let rowIDs): for rowID in rowIDs { byRowID[rowID, default: [:]][id] = read }
        }
    }

    /// Unindexes the observation `id`, if it reads the table.
    mutating func remove(_ id: ObjectIdentifier) {
        if everyRow.removeValue(forKey: id) != nil { return }
        guard let read = someRows.removeValue(forKey: id), let rows = read.rows else { return }
        switch rows {
        case .one(let rowID): unindex(id, rowID: rowID)
        case .many(let rowIDs): for rowID in rowIDs { unindex(id, rowID: rowID) }
        }
    }

    private mutating func unindex(_ id: ObjectIdentifier, rowID: Int64) {
        byRowID[rowID]?[id] = nil
        if byRowID[rowID]?.isEmpty == true { byRowID[rowID] = nil }
    }

    /// Calls `body` with each observation whose read `change` can modify
    /// (an observation of several changed rows may come more than once).
    func forEachTouched(by change: TableChange, _ body: (ObjectIdentifier) -> Void) {
        for (id, read) in everyRow where change.touches(read) { body(id) }
        guard !someRows.isEmpty else { return }
        switch change.rowIDs {
        case .one(let rowID):
            visit(rowID: rowID, change: change, body)
        case .many(let rowIDs) where rowIDs.count < someRows.count:
            for rowID in rowIDs { visit(rowID: rowID, change: change, body) }
        case .many, nil:
            // Unknown rows, or more changed rows than observations: the scan is shorter.
            for (id, read) in someRows where change.touches(read) { body(id) }
        }
    }

    @inline(__always)
    private func visit(rowID: Int64, change: TableChange, _ body: (ObjectIdentifier) -> Void) {
        guard let observers = byRowID[rowID] else { return }
        for (id, read) in observers where read.columns.intersects(change.columns) { body(id) }
    }
}
