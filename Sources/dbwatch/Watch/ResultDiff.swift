import DBWatch

/// The row-level differences between two successive values of a query, for
/// `--changes`.
///
/// When both values have the same key columns (a primary key or rowid, see
/// ``QueryResult/keyColumns``), rows are matched by key: a row whose key is
/// new was added, a key that disappeared was removed, and a key whose other
/// values differ was changed. Without a key, the rows are compared as a
/// multiset: only additions and removals.
///
/// ```swift
/// let diff = ResultDiff(from: previous, to: current)
/// diff.added.count; diff.removed.count; diff.changed.first?.old
/// ```
struct ResultDiff: Equatable, Sendable {
    /// A row whose key stayed and whose other values changed.
    struct ChangedRow: Equatable, Sendable {
        /// The row before.
        var old: [DatabaseValue]
        /// The row after.
        var new: [DatabaseValue]

        /// The positions of the columns whose values differ.
        var changedColumns: [Int] {
            new.indices.filter { $0 >= old.count || old[$0] != new[$0] }
        }
    }

    /// The column names of the new value.
    var columns: [String]
    /// The key columns rows were matched by, or `nil` for a multiset comparison.
    var keyColumns: [Int]?
    /// Rows only in the new value, in its order.
    var added: [[DatabaseValue]] = []
    /// Rows only in the old value, in its order.
    var removed: [[DatabaseValue]] = []
    /// Rows present in both with different values, in the new value's order.
    var changed: [ChangedRow] = []

    /// Whether nothing differs.
    var isEmpty: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }

    /// The differences from `old` to `new`; from `nil`, every row is added.
    init(from old: QueryResult?, to new: QueryResult) {
        columns = new.columns
        guard let old else {
            keyColumns = new.keyColumns
            added = new.rows
            return
        }
        if old.columns != new.columns {
            // Another shape (a schema change): nothing matches.
            keyColumns = nil
            removed = old.rows
            added = new.rows
        } else if let keys = new.keyColumns, old.keyColumns == keys {
            keyColumns = keys
            var oldByKey: [[DatabaseValue]: [DatabaseValue]] = [:]
            for row in old.rows { oldByKey[keys.map { row[$0] }] = row }
            var seen: Set<[DatabaseValue]> = []
            for row in new.rows {
                let key = keys.map { row[$0] }
                seen.insert(key)
                if let before = oldByKey[key] {
                    if before != row { changed.append(ChangedRow(old: before, new: row)) }
                } else {
                    added.append(row)
                }
            }
            removed = old.rows.filter { row in !seen.contains(keys.map { row[$0] }) }
        } else {
            keyColumns = nil
            var remaining: [[DatabaseValue]: Int] = [:]
            for row in old.rows { remaining[row, default: 0] += 1 }
            for row in new.rows {
                if let count = remaining[row], count > 0 {
                    remaining[row] = count - 1
                } else {
                    added.append(row)
                }
            }
            for row in old.rows {
                if let count = remaining[row], count > 0 {
                    remaining[row] = count - 1
                    removed.append(row)
                }
            }
        }
    }
}
