import Foundation

extension KeyedChanges {
    /// The changes that turn `old` into `new`, with as few moves as
    /// possible: the rows they do not mention are a longest increasing
    /// subsequence of the common keys' old positions taken in the new
    /// order. O(n log n) in the number of rows.
    ///
    /// Deletes are in the old order; upserts in the new order, so those
    /// with an index are sorted by index. Equal results give empty changes.
    ///
    /// ```swift
    /// // One score changed in a leaderboard: one upsert, no delete.
    /// let changes = KeyedChanges.between(before, after)
    /// changes.upserts.count   // 1
    /// ```
    ///
    /// - Parameters:
    ///   - old: The result a client holds.
    ///   - new: The fresh result.
    /// - Returns: Changes such that `old.applying(changes) == new`.
    public static func between(_ old: KeyedRows, _ new: KeyedRows) -> KeyedChanges {
        var deletes: [Data] = []
        for row in old.rows where new.positions[row.key] == nil {
            deletes.append(row.key)
        }
        // The old position of each new row whose key the old result has
        // (-1 for a new key), and the same positions of common keys alone.
        var oldPositions = [Int](repeating: -1, count: new.rows.count)
        var commonOldPositions: [Int] = []
        commonOldPositions.reserveCapacity(new.rows.count)
        for (position, row) in new.rows.enumerated() {
            if let oldPosition = old.positions[row.key] {
                oldPositions[position] = oldPosition
                commonOldPositions.append(oldPosition)
            }
        }
        let stays = longestIncreasingSubsequence(commonOldPositions)
        var upserts: [Upsert] = []
        var common = 0
        for (position, row) in new.rows.enumerated() {
            let oldPosition = oldPositions[position]
            guard oldPosition >= 0 else {
                upserts.append(Upsert(key: row.key, index: position, row: row.row))
                continue
            }
            let changed = old.rows[oldPosition].row != row.row
            if stays[common] {
                if changed { upserts.append(Upsert(key: row.key, row: row.row)) }
            } else {
                upserts.append(Upsert(key: row.key, index: position, row: changed ? row.row : nil))
            }
            common += 1
        }
        return KeyedChanges(deletes: deletes, upserts: upserts)
    }
}
