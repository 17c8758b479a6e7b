import DBWatchDelivery
import Foundation

/// One subscription's result after one batch of the server: its position,
/// what the batch brought (a snapshot, keyed changes or a whole value),
/// and the result it gives. What ``SyncClient/changes(of:params:)``
/// delivers.
///
/// ```swift
/// for try await update in client.changes(of: "leaderboard", params: ["n": "10"]) {
///     if update.kind == .changes { animate(update.changes) }   // rows moved, inserted, deleted by key
///     let players = try update.decode([Player].self)          // the whole result
/// }
/// ```
public struct SyncUpdate: Sendable {
    /// What a batch's entry was.
    ///
    /// ```swift
    /// update.kind == .snapshot   // the whole result, replacing what the client held
    /// ```
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        /// The whole result (on subscribing, after a resume the server
        /// could not serve with changes, after a slow client or a reset);
        /// ``SyncUpdate/reason`` says why.
        public static let snapshot = Kind(name: "snapshot")
        /// Keyed changes of one commit, or of several after a resume
        /// (``SyncUpdate/changes`` has one element per commit).
        public static let changes = Kind(name: "changes")
        /// A whole value: a query without a key.
        public static let value = Kind(name: "value")

        /// The kind's name, such as `snapshot`.
        public var description: String { name }
    }

    /// The position of the batch: every subscription of the client is as
    /// of this position (`EPOCH/SEQUENCE`). Two updates of one batch carry
    /// the same position.
    ///
    /// ```swift
    /// update.position   // "k7Qx2/1043"
    /// ```
    public let position: String
    /// What the batch brought.
    public let kind: Kind
    /// Why a snapshot was sent: `subscribed`, `resumed`, `slow` or `reset`;
    /// `nil` for other kinds.
    ///
    /// ```swift
    /// update.reason == "resumed"   // the client reconnected to a restarted server
    /// ```
    public let reason: String?
    /// The keyed changes applied, one per commit (several after a resume);
    /// empty for a snapshot or a value.
    ///
    /// ```swift
    /// update.changes.flatMap(\.deletes)   // the keys removed
    /// ```
    public let changes: [KeyedChanges]
    /// The result's rows by key, in order; `nil` for a whole value.
    ///
    /// ```swift
    /// update.rows?.row(forKey: Data(#""carol""#.utf8))   // carol's row, as JSON
    /// ```
    public let rows: KeyedRows?
    /// The columns a served SQL query's snapshot named, if any.
    public let columns: [String]?
    /// The whole value's JSON: for keyed rows, `[ROW,ROW,…]` (a collection
    /// of `Identifiable` elements); otherwise the value as the server sent it.
    ///
    /// ```swift
    /// String(decoding: update.json, as: UTF8.self)   // [{"name":"carol","score":120},…]
    /// ```
    public let json: Data

    init(
        position: String, kind: Kind, reason: String?, changes: [KeyedChanges], rows: KeyedRows?,
        columns: [String]?, json: Data
    ) {
        self.position = position
        self.kind = kind
        self.reason = reason
        self.changes = changes
        self.rows = rows
        self.columns = columns
        self.json = json
    }

    /// The result decoded as `type`: the `Value` of the server's
    /// `Queryable` (an array of its `Identifiable` elements for a keyed
    /// query).
    ///
    /// ```swift
    /// let players = try update.decode([Player].self)
    /// ```
    ///
    /// - Parameters:
    ///   - type: The value's type.
    ///   - decoder: The decoder (its date and key strategies must match
    ///     the server's encoder).
    /// - Returns: The value.
    /// - Throws: The decoder's `DecodingError`.
    public func decode<Value: Decodable>(_ type: Value.Type, using decoder: JSONDecoder = JSONDecoder()) throws -> Value
    {
        try decoder.decode(type, from: json)
    }

    /// `[ROW,ROW,…]`.
    static func arrayJSON(of rows: KeyedRows) -> Data {
        var json: [UInt8] = []
        json.reserveCapacity(rows.rows.reduce(2) { $0 + $1.row.count + 1 })
        json.append(UInt8(ascii: "["))
        for (index, row) in rows.rows.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            json.append(contentsOf: row.row)
        }
        json.append(UInt8(ascii: "]"))
        return Data(json)
    }
}
