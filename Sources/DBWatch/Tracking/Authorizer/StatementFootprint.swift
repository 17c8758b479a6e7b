import CSQLite

/// What one prepared statement reads and writes, as the authorizer reported
/// it during `sqlite3_prepare` (trigger bodies included).
struct StatementFootprint {
    /// Tables and columns read.
    var reads = DatabaseRegion()
    /// Tables written, with the columns an `UPDATE` sets (`.all` for inserts
    /// and deletes).
    var writes: [TableName: ColumnSet] = [:]
    /// `CREATE`, `DROP`, `ALTER`, `ATTACH`, `DETACH`: every query may change.
    var changesSchema = false
    /// Tables whose rows are read, named without a schema (`main` or `temp`).
    var unqualifiedRowsReads: [String] = []
    /// `BEGIN`, `COMMIT`/`END` or `ROLLBACK` (not savepoints): refused while
    /// the library owns the transaction (see `Database.ownsTransaction`).
    var beginsOrEndsTransaction = false
    /// A `PRAGMA` that only reads, with no value, that SQLite nevertheless
    /// does not mark read-only (`PRAGMA journal_mode`); recorded under an
    /// untrusted policy only (see `Database.checkUntrusted`).
    var readsPragmaNotMarkedReadOnly = false

    mutating func recordWrite(_ table: TableName, columns: ColumnSet) {
        if let existing = writes[table] {
            writes[table] = existing.union(columns)
        } else {
            writes[table] = columns
        }
    }
}
