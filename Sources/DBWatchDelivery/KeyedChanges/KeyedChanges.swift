import Foundation

/// What turns one ordered keyed result into the next: keys deleted, and
/// rows inserted, moved or updated by key (see <doc:KeyedChangesRule> for the
/// rule every client applies).
///
/// ```swift
/// let changes = KeyedChanges.between(previous, fresh)
/// try previous.applying(changes) == fresh   // true
/// changes.encodedJSON()                      // {"delete":[],"upsert":[{"key":7,"index":0,"row":…}]}
/// ```
public struct KeyedChanges: Sendable, Hashable {
    /// The keys whose rows are removed, as canonical JSON bytes.
    public var deletes: [Data]
    /// The rows inserted, moved or updated, sorted by index (those without
    /// an index, updated in place, in the new order among them).
    public var upserts: [Upsert]

    /// Changes that delete `deletes` and upsert `upserts`.
    ///
    /// ```swift
    /// let move = KeyedChanges(upserts: [.init(key: Data("7".utf8), index: 0)])
    /// ```
    ///
    /// - Parameters:
    ///   - deletes: The keys removed.
    ///   - upserts: The rows inserted, moved or updated.
    public init(deletes: [Data] = [], upserts: [Upsert] = []) {
        self.deletes = deletes
        self.upserts = upserts
    }

    /// Whether the changes change nothing.
    ///
    /// ```swift
    /// KeyedChanges.between(rows, rows).isEmpty   // true
    /// ```
    public var isEmpty: Bool { deletes.isEmpty && upserts.isEmpty }
}
