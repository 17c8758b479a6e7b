import DBWatch

/// One line of the leaderboard.
public struct Player: Codable, Hashable, Sendable {
    /// The player's name, unique.
    public var name: String
    /// The player's score.
    public var score: Int

    /// A player with a score.
    public init(name: String, score: Int) {
        self.name = name
        self.score = score
    }
}

/// The leaderboard: the best `limit` players, best first (ties by name).
/// `Decodable`, so that a WebSocket client can send `{"limit": 3}`.
public struct TopPlayers: Queryable, Codable {
    /// No players yet.
    public static var defaultValue: [Player] { [] }

    /// How many players to show, from 0 to 100.
    public var limit: Int

    /// The best `limit` players.
    public init(limit: Int = 10) {
        self.limit = limit
    }

    /// Fetches the leaderboard.
    public func fetch(_ db: Database) throws -> [Player] {
        try db.fetchAll(
            Player.self, sql: "SELECT name, score FROM player ORDER BY score DESC, name LIMIT ?",
            arguments: [min(max(limit, 0), 100)])
    }
}
