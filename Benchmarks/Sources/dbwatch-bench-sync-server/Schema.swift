import DBWatch

/// Creates the benchmark's tables, empty, then fills them: `players`
/// leaderboard rows and `items` item rows.
func createSchema(_ pool: DatabasePool, players: Int, items: Int) async throws {
    try await pool.write { db in
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL);
                CREATE INDEX IF NOT EXISTS player_score ON player (score DESC, id);
                CREATE TABLE IF NOT EXISTS item (
                    id INTEGER PRIMARY KEY, slot INTEGER NOT NULL, round INTEGER NOT NULL, text TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS item_slot ON item (slot);
                DELETE FROM player; DELETE FROM item;
                """)
        for id in stride(from: 1, through: players, by: 1) {
            try db.execute(
                sql: "INSERT INTO player (id, name, score) VALUES (?, ?, ?)",
                arguments: [id, "player \(id)", LeaderboardQuery.initialScore(of: id)])
        }
        for id in stride(from: 1, through: items, by: 1) {
            try db.execute(
                sql: "INSERT INTO item (id, slot, round, text) VALUES (?, ?, 0, ?)", arguments: [id, id, Item.text(id)])
        }
    }
}
