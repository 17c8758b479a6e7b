import DBWatch
import DBWatchDelivery
import DBWatchTestSupport
import Foundation
import Testing

/// The property of issue 26 over a real SQLite database: after random
/// commits, the changes between the previous and the fresh result of an
/// ordered, a limited, a joined and an aggregated query, applied to the
/// previous result, give the fresh result, order included.
@Suite("Keyed changes: random commits over SQLite")
struct KeyedChangesDatabasePropertyTests {
    static let schema = """
        CREATE TABLE player(
            id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL, team INTEGER NOT NULL, rating REAL);
        CREATE TABLE award(
            player_id INTEGER NOT NULL, kind TEXT NOT NULL, points INTEGER NOT NULL, PRIMARY KEY (player_id, kind));
        """

    /// A row of the ordered queries, keyed by its id.
    struct Standing: Decodable, Encodable, Identifiable {
        var id: Int64
        var name: String
        var score: Int64
        var team: Int64
        var rating: Double?
    }

    /// A row of the join, keyed by player and kind.
    struct Award: Decodable, Encodable, Identifiable {
        /// `[player, kind]`, a JSON array.
        struct ID: Hashable, Encodable {
            var player: Int64
            var kind: String
            func encode(to encoder: any Encoder) throws {
                var container = encoder.unkeyedContainer()
                try container.encode(player)
                try container.encode(kind)
            }
        }
        var player: Int64
        var kind: String
        var name: String
        var points: Int64
        var id: ID { ID(player: player, kind: kind) }
    }

    /// A query of the property, with its key columns.
    struct Query: Sendable {
        var name: String
        var sql: String
        var columns: [String]
        var key: [String]
    }

    static let ordered = Query(
        name: "ordered", sql: "SELECT id, name, score, team, rating FROM player ORDER BY score DESC, id",
        columns: ["id", "name", "score", "team", "rating"], key: ["id"])
    static let limited = Query(
        name: "limited", sql: "SELECT id, name, score, team, rating FROM player ORDER BY score DESC, id LIMIT 10",
        columns: ["id", "name", "score", "team", "rating"], key: ["id"])
    static let joined = Query(
        name: "joined",
        sql: """
            SELECT a.player_id AS player, a.kind, p.name, a.points FROM award a JOIN player p ON p.id = a.player_id
            ORDER BY a.points DESC, p.id, a.kind
            """,
        columns: ["player", "kind", "name", "points"], key: ["player", "kind"])
    static let aggregated = Query(
        name: "aggregated",
        sql: """
            SELECT team, count(*) AS players, sum(score) AS total, max(score) AS best, avg(rating) AS rating
            FROM player GROUP BY team ORDER BY total DESC, team
            """,
        columns: ["team", "players", "total", "best", "rating"], key: ["team"])
    static let queries = [ordered, limited, joined, aggregated]

    /// Each query's result keyed by its columns, then the ordered, limited
    /// and joined ones again through their `Identifiable` elements.
    static func fetchAll(_ db: Database) throws -> [(name: String, rows: KeyedRows)] {
        var results: [(name: String, rows: KeyedRows)] = try queries.map { query in
            let rows = try db.fetchAll(sql: query.sql)
            try #require(rows.allSatisfy { $0.columnNames == query.columns }, "the columns of \(query.name)")
            let cells = rows.map { $0.values.map(cell) }
            return (query.name, try KeyedRows(columns: query.columns, rows: cells, key: query.key))
        }
        results.append(("ordered elements", try KeyedRows(identifying: db.fetchAll(Standing.self, sql: ordered.sql))))
        results.append(("limited elements", try KeyedRows(identifying: db.fetchAll(Standing.self, sql: limited.sql))))
        results.append(("joined elements", try KeyedRows(identifying: db.fetchAll(Award.self, sql: joined.sql))))
        return results
    }

    /// A cell's JSON.
    static func cell(_ value: DatabaseValue) -> Data {
        switch value {
        case .null: json("null")
        case .integer(let integer): json(String(integer))
        case .real(let real): json("\(real)")
        case .text(let text): try! JSONEncoder().encode(text)
        case .invalidUTF8Text, .blob: json("null")  // the schema stores neither
        }
    }

    /// One random statement: inserts, updates and deletes of players and
    /// awards, over few ids and scores so that rows collide and tie.
    static func randomStatement(using generator: inout SeededGenerator) -> (String, StatementArguments) {
        let player = Int64.random(in: 1...40, using: &generator)
        let score = Int64.random(in: 0...15, using: &generator)
        let kind = ["gold", "silver", "bronze"].randomElement(using: &generator)!
        switch Int.random(in: 0..<10, using: &generator) {
        case 0, 1:
            let rating: Double? = Bool.random(using: &generator) ? Double(score) / 4 : nil
            return (
                "INSERT OR REPLACE INTO player (id, name, score, team, rating) VALUES (?, ?, ?, ?, ?)",
                [player, "p\(player)", score, Int64.random(in: 1...5, using: &generator), rating]
            )
        case 2, 3: return ("UPDATE player SET score = ? WHERE id = ?", [score, player])
        case 4: return ("UPDATE player SET team = ?, name = ? WHERE id = ?", [score % 5 + 1, "n\(score)", player])
        case 5: return ("DELETE FROM player WHERE id = ?", [player])
        case 6: return ("UPDATE player SET score = score + 1 WHERE score >= ?", [score])
        case 7:
            return (
                "INSERT OR REPLACE INTO award (player_id, kind, points) VALUES (?, ?, ?)", [player, kind, score]
            )
        case 8: return ("UPDATE award SET points = ? WHERE player_id = ?", [score, player])
        default: return ("DELETE FROM award WHERE player_id = ? AND kind = ?", [player, kind])
        }
    }

    @Test(arguments: [0x26_0001, 0x26_5EED] as [UInt64])
    func changesAppliedToThePreviousResultGiveTheFreshOneAfterEveryCommit(seed: UInt64) async throws {
        try await withTimeout {
            let queue = try DatabaseQueue()
            try await queue.write { db in try db.execute(sql: Self.schema) }
            var generator = SeededGenerator(seed: seed)
            var previous = try await queue.read { db in try Self.fetchAll(db) }
            // What the changes did over the run, so that the run is known
            // to have covered every kind of change.
            var seen = (deletes: 0, inserts: 0, moves: 0, inPlace: 0)
            for commit in 0..<200 {
                let statements = (0..<Int.random(in: 1...4, using: &generator)).map { _ in
                    Self.randomStatement(using: &generator)
                }
                try await queue.write { db in
                    for (sql, arguments) in statements { try db.execute(sql: sql, arguments: arguments) }
                }
                let fresh = try await queue.read { db in try Self.fetchAll(db) }
                for (old, new) in zip(previous, fresh) {
                    let changes = KeyedChanges.between(old.rows, new.rows)
                    let context = "seed \(seed), commit \(commit), query \(new.name)"
                    let decoded = try KeyedChanges(json: changes.encodedJSON())
                    #expect(decoded == changes, "JSON round trip, \(context)")
                    #expect(try old.rows.applying(decoded) == new.rows, "\(context): \(changes)")
                    #expect(changes.isEmpty == (old.rows == new.rows), "\(context)")
                    seen.deletes += changes.deletes.count
                    for upsert in changes.upserts {
                        if upsert.index == nil {
                            seen.inPlace += 1
                        } else if old.rows.row(forKey: upsert.key) == nil {
                            seen.inserts += 1
                        } else {
                            seen.moves += 1
                        }
                    }
                }
                previous = fresh
            }
            await queue.close()
            #expect(
                seen.deletes > 0 && seen.inserts > 0 && seen.moves > 0 && seen.inPlace > 0, "seed \(seed): \(seen)")
        }
    }
}
