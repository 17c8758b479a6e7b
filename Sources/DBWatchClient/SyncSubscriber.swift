import DBWatchDelivery
import Foundation

/// What the client holds of one subscription: its request, the result as
/// of its position, and where its updates go.
struct SyncSubscriber: Sendable {
    let query: String
    let params: [String: String]
    let continuation: AsyncStream<SyncConnection.Event>.Continuation
    /// Its id in the current session, once subscribed there.
    var serverID: String?
    /// Whether the server sent an entry for `serverID`: only then do the
    /// batches that do not list it advance its position.
    var isSynced = false
    /// The position of the last batch applied; sent when subscribing again.
    var position: String?
    /// The keyed result, or `nil` for a whole value or before the first.
    var rows: KeyedRows?
    /// The columns of the last snapshot that named them.
    var columns: [String]?

    init(query: String, params: [String: String], continuation: AsyncStream<SyncConnection.Event>.Continuation) {
        self.query = query
        self.params = params
        self.continuation = continuation
    }

    /// What `entry` makes of this subscription, computed without changing
    /// it, and the update it delivers.
    ///
    /// - Throws: ``KeyedRowsError`` when the entry does not fit the result
    ///   held (changes without a result, a key it does not have, a
    ///   snapshot with a key twice, an unknown kind).
    func staged(_ entry: SyncEntry, at position: String) throws(KeyedRowsError) -> (SyncSubscriber, SyncUpdate) {
        var next = self
        next.isSynced = true
        let update: SyncUpdate
        switch entry {
        case .snapshot(let reason, let columns, let rows):
            let keyed = try KeyedRows(rows)
            next.rows = keyed
            next.columns = columns ?? self.columns
            update = SyncUpdate(
                position: position, kind: .snapshot, reason: reason, changes: [], rows: keyed, columns: next.columns,
                json: SyncUpdate.arrayJSON(of: keyed))
        case .changes(let steps):
            guard var keyed = rows else { throw .invalidJSON(at: 0, "changes before a snapshot") }
            for step in steps { keyed = try keyed.applying(step) }
            next.rows = keyed
            update = SyncUpdate(
                position: position, kind: .changes, reason: nil, changes: steps, rows: keyed, columns: columns,
                json: SyncUpdate.arrayJSON(of: keyed))
        case .value(let json):
            next.rows = nil
            update = SyncUpdate(
                position: position, kind: .value, reason: nil, changes: [], rows: nil, columns: nil, json: json)
        case .unknown(let kind):
            throw .invalidJSON(at: 0, "an entry of unknown kind \(kind ?? "null")")
        }
        return (next, update)
    }
}
