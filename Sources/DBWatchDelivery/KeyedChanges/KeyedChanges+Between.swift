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
        // The old position of each new row whose key the old result has
        // (-1 for a new key), and the same positions of common keys alone.
        // A row usually follows the row that followed it before: its key is
        // compared at that position first, and looked up only when it
        // differs (a move, an insert, after a delete).
        var oldPositions = [Int](repeating: -1, count: new.rows.count)
        var commonOldPositions: [Int] = []
        commonOldPositions.reserveCapacity(new.rows.count)
        var matched = [Bool](repeating: false, count: old.rows.count)
        var guess = 0
        for (position, row) in new.rows.enumerated() {
            let oldPosition: Int?
            if guess < old.rows.count && old.rows[guess].key == row.key {
                oldPosition = guess
            } else {
                oldPosition = old.positions[row.key]
            }
            if let oldPosition {
                oldPositions[position] = oldPosition
                commonOldPositions.append(oldPosition)
                matched[oldPosition] = true
                guess = oldPosition + 1
            }
        }
        var deletes: [Data] = []
        for (position, row) in old.rows.enumerated() where !matched[position] {
            deletes.append(row.key)
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
