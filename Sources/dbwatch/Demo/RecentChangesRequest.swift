import DBWatch

/// The latest score changes, which a trigger writes into `score_change`:
/// observing them shows that changes made by triggers are seen too.
///
/// ```swift
/// for try await changes in database.observe(RecentChangesRequest(limit: 4)) { … }
/// ```
struct RecentChangesRequest: Queryable {
    /// One score change.
    struct Entry: Decodable, Hashable, Sendable {
        var id: Int64
        var name: String
        var oldScore: Int
        var newScore: Int
    }

    /// No change yet.
    static var defaultValue: [Entry] { [] }

    /// How many changes to show.
    var limit = 4

    /// The latest `limit` changes, newest first.
    func fetch(_ db: Database) throws -> [Entry] {
        try db.fetchAll(
            Entry.self,
            sql: """
                SELECT score_change.id, player.name, score_change.old_score AS oldScore,
                       score_change.new_score AS newScore
                FROM score_change JOIN player ON player.id = score_change.player_id
                ORDER BY score_change.id DESC
                LIMIT ?
                """,
            arguments: [limit])
    }
}
