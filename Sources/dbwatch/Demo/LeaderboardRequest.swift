import DBWatch

/// The demo's leaderboard: the best players with their team, observed live.
///
/// ```swift
/// for try await players in database.observe(LeaderboardRequest(limit: 10)) { … }
/// ```
struct LeaderboardRequest: Queryable {
    /// One line of the leaderboard.
    struct Entry: Decodable, Hashable, Sendable {
        var id: Int64
        var name: String
        var score: Int
        var team: String?
        var color: String?
    }

    /// No player yet.
    static var defaultValue: [Entry] { [] }

    /// How many players to show.
    var limit = 10

    /// The `limit` best players, best first (ties by name).
    func fetch(_ db: Database) throws -> [Entry] {
        try db.fetchAll(
            Entry.self,
            sql: Self.sql, arguments: ["limit": limit])
    }

    /// The SQL, also served by `demo --serve` (`:limit` from the URL).
    static let sql = """
        SELECT player.id, player.name, player.score, team.name AS team, team.color
        FROM player LEFT JOIN team ON team.id = player.team_id
        ORDER BY player.score DESC, player.name
        LIMIT :limit
        """
}
