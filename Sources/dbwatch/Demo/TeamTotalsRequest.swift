import DBWatch

/// The demo's team totals, from the `team_score` view, observed live.
///
/// ```swift
/// for try await teams in database.observe(TeamTotalsRequest()) { … }
/// ```
struct TeamTotalsRequest: Queryable {
    /// One team's line.
    struct Entry: Decodable, Hashable, Sendable {
        var id: Int64
        var name: String
        var color: String
        var players: Int
        var total: Int
    }

    /// No team yet.
    static var defaultValue: [Entry] { [] }

    /// Every team, best total first.
    func fetch(_ db: Database) throws -> [Entry] {
        try db.fetchAll(
            Entry.self,
            sql: Self.sql)
    }

    /// The SQL, also served by `demo --serve`.
    static let sql = """
        SELECT team_score.team_id AS id, team_score.team_name AS name, team.color,
               team_score.player_count AS players, team_score.total_score AS total
        FROM team_score JOIN team ON team.id = team_score.team_id
        ORDER BY total DESC, name
        """
}
