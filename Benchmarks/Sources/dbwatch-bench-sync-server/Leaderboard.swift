import DBWatch

/// A leaderboard row: `id`, `name`, `score` (about 45 bytes of JSON).
struct Player: Codable, Hashable, Sendable, Identifiable {
    var id: Int
    var name: String
    var score: Int
}

/// Every player, best first: the one query that the clients of the CPU and
/// resume workloads share. Scores start at 0 or below; commit `round` sets
/// one player's score to `round`, so that player moves to the top and the
/// first `"score":` of any value, snapshot or change is the latest round.
struct LeaderboardQuery: Queryable {
    static let defaultValue: [Player] = []

    func fetch(_ db: Database) throws -> [Player] {
        try db.fetchAll(Player.self, sql: "SELECT id, name, score FROM player ORDER BY score DESC, id")
    }

    /// The player whose score commit `round` sets: a different one for
    /// each round up to `players` rounds (7,919 is prime).
    static func player(movedBy round: Int, players: Int) -> Int {
        round * 7_919 % players + 1
    }

    /// The starting score of player `id`: spread, and at most 0.
    static func initialScore(of id: Int) -> Int {
        -(id * 104_729 % 1_000_003)
    }
}
