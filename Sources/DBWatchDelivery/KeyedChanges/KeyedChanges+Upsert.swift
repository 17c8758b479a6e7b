import Foundation

extension KeyedChanges {
    /// One row inserted, moved or updated: with an `index`, the key's row
    /// is removed and inserted at that index (a new key, a move); without
    /// one, the row is replaced where it stands.
    ///
    /// ```swift
    /// Upsert(key: Data("7".utf8), index: 0, row: Data("[7,120]".utf8))   // moves (or inserts) 7 to the top
    /// Upsert(key: Data("7".utf8), index: 0)                              // moves 7, its row unchanged
    /// Upsert(key: Data("7".utf8), row: Data("[7,120]".utf8))             // updates 7 in place
    /// ```
    public struct Upsert: Sendable, Hashable {
        /// The key, as canonical JSON bytes.
        public var key: Data
        /// Where the row stands in the new result, or `nil` when it stays
        /// where it is.
        public var index: Int?
        /// The new row's JSON, or `nil` for a move that keeps the row.
        public var row: Data?

        /// An upsert of `key`.
        ///
        /// - Parameters:
        ///   - key: The key's canonical JSON bytes.
        ///   - index: The row's position in the new result, or `nil` to
        ///     update it in place.
        ///   - row: The row's JSON, or `nil` to keep the row (a move).
        public init(key: Data, index: Int? = nil, row: Data? = nil) {
            self.key = key
            self.index = index
            self.row = row
        }
    }
}
