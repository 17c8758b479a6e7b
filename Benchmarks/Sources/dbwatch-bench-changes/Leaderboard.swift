import Foundation

/// A leaderboard of `rows` players ordered by score, descending, then id,
/// before and after one player's score changes (it moves from the middle
/// to the top).
struct Leaderboard {
    /// One row.
    struct Player: Identifiable, Encodable {
        var id: Int
        var name: String
        var score: Int

        /// The row as `dbwatch serve` holds it: each cell's JSON.
        var cells: [Data] { [Data(String(id).utf8), Data("\"\(name)\"".utf8), Data(String(score).utf8)] }
    }

    var before: [Player]
    var after: [Player]

    init(rows: Int) {
        var players = (0..<rows).map { Player(id: $0, name: "player \($0)", score: ($0 * 7919) % 1_000_003) }
        before = Self.ordered(players)
        players[rows / 2].score = 10_000_000
        after = Self.ordered(players)
    }

    static func ordered(_ players: [Player]) -> [Player] {
        players.sorted { ($1.score, $0.id) < ($0.score, $1.id) }
    }
}
