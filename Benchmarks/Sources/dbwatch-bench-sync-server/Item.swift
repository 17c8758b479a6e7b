import DBWatch

/// One row of the latency workload: its round and a text (about 100 bytes of JSON).
struct Item: Codable, Hashable, Sendable, Identifiable {
    var id: Int
    var round: Int
    var text: String

    static func text(_ id: Int) -> String {
        "item \(id): " + String(repeating: "x", count: 64)
    }
}

/// One item by primary key (`WHERE id = ?`): the distinct live queries of
/// the latency workload, one per `id`. DBWatch's region of such a query is
/// the row itself, so a commit that changes item 17 refetches item 17's
/// query only.
struct ItemQuery: Queryable {
    static let defaultValue: [Item] = []
    var id: Int

    func fetch(_ db: Database) throws -> [Item] {
        try db.fetchAll(Item.self, sql: "SELECT id, round, text FROM item WHERE id = ?", arguments: [id])
    }
}

/// One item by `slot`, an indexed column that is not the key (each item's
/// slot is its id): the same rows as ``ItemQuery``, but DBWatch's region of
/// such a query is the whole `item` table, so every commit to `item`
/// refetches every one of these queries (they find their value unchanged,
/// but one fetch each).
struct ItemBySlotQuery: Queryable {
    static let defaultValue: [Item] = []
    var slot: Int

    func fetch(_ db: Database) throws -> [Item] {
        try db.fetchAll(Item.self, sql: "SELECT id, round, text FROM item WHERE slot = ?", arguments: [slot])
    }
}
