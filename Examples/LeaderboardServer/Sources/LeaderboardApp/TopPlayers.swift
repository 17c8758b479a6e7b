import DBWatch

/// One line of the leaderboard. `Identifiable` by its name, so that the
/// sync protocol sends the leaderboard as keyed changes (a row moved, a row
/// updated) instead of the whole list again.
public struct Player: Codable, Hashable, Sendable, Identifiable {
    /// The player's name, unique.
    public var name: String
    /// The player's score.
    public var score: Int

    /// The player's key in the sync protocol: the name, unique.
    public var id: String { name }

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

/// How many players there are: a value without rows to key, so the sync
/// protocol sends it whole after every commit that changes it.
public struct PlayerCount: Queryable {
    /// No players yet.
    public static var defaultValue: Int { 0 }

    /// The number of players.
    public init() {}

    /// Counts the players.
    public func fetch(_ db: Database) throws -> Int {
        try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") ?? 0
    }
}
