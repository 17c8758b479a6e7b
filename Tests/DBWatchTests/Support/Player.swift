import DBWatch

/// The fixture row type used across tests.
struct Player: Codable, Hashable, Sendable {
    var id: Int64
    var name: String
    var score: Int
}

let playerSchema = """
    CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL DEFAULT 0);
    """

/// An in-memory queue with the `player` table.
func makePlayerQueue() async throws -> DatabaseQueue {
    let queue = try DatabaseQueue()
    try await queue.write { db in try db.execute(sql: playerSchema) }
    return queue
}
