import DBWatch

/// The demo's simulated writer: teams and players to start with, then one
/// write at a time (a score changes, a player joins, leaves or changes
/// team), chosen by a seeded generator so that a seed replays the same game.
///
/// ```swift
/// var simulation = DemoSimulation(seed: 7)
/// try await database.write { db in try DemoSimulation.seedIfEmpty(db, seed: 7) }
/// let event = try await simulation.write(to: database)   // "Arthur +12 (130)"
/// ```
struct DemoSimulation: Sendable {
    /// The teams: name and colour.
    static let teams: [(name: String, color: String)] = [
        ("Red", "red"), ("Blue", "blue"), ("Green", "green"), ("Gold", "yellow"),
    ]
    /// Names for players, the first ten seeded.
    static let names = [
        "Arthur", "Barbara", "Craig", "Dana", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kenji", "Lena",
        "Malik", "Nora", "Oscar", "Priya", "Quentin", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wen", "Yusuf", "Zoe",
    ]
    /// Players never drop below this many, nor rise above `maximumPlayers`.
    static let minimumPlayers = 6
    /// See `minimumPlayers`.
    static let maximumPlayers = 14

    private var generator: SeededGenerator
    /// The number of writes so far.
    private(set) var step = 0

    /// A simulation whose writes depend only on `seed` (and on the
    /// database's state, which other processes may change too).
    init(seed: UInt64) {
        generator = SeededGenerator(seed: seed)
    }

    /// Creates the teams and ten players when the database has none.
    /// Returns whether it wrote anything.
    @discardableResult
    static func seedIfEmpty(_ db: Database, seed: UInt64) throws -> Bool {
        var generator = SeededGenerator(seed: seed ^ 0x5EED)
        var wrote = false
        if try db.fetchOne(Int.self, sql: "SELECT count(*) FROM team") == 0 {
            for team in teams {
                try db.execute(sql: "INSERT INTO team (name, color) VALUES (?, ?)", arguments: [team.name, team.color])
            }
            wrote = true
        }
        if try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") == 0 {
            let teamIDs = try db.fetchAll(Int64.self, sql: "SELECT id FROM team ORDER BY id")
            for (index, name) in names.prefix(10).enumerated() {
                let teamID: Int64? = teamIDs.isEmpty ? nil : teamIDs[index % teamIDs.count]
                let score = Int.random(in: 20...120, using: &generator)
                try db.execute(
                    sql: "INSERT INTO player (name, score, team_id) VALUES (?, ?, ?)",
                    arguments: [name, score, teamID])
            }
            wrote = true
        }
        return wrote
    }

    /// Makes the next write in one transaction and describes it.
    mutating func write(to database: some DatabaseWriter) async throws -> String {
        let dice = (0..<4).map { _ in generator.next() }
        let isRosterChange = step % 4 == 3
        step += 1
        return try await database.write { db in
            try DemoSimulation.write(db, dice: dice, isRosterChange: isRosterChange)
        }
    }

    /// One write, decided by `dice` and the current players.
    private static func write(_ db: Database, dice: [UInt64], isRosterChange: Bool) throws -> String {
        let players = try db.fetchAll(sql: "SELECT id, name, score, team_id FROM player ORDER BY id")
        let teams = try db.fetchAll(sql: "SELECT id, name FROM team ORDER BY id")
        func pick<T>(_ items: [T], _ die: UInt64) -> T { items[Int(die % UInt64(items.count))] }
        func teamName(_ id: DatabaseValue) -> String {
            teams.first { $0[0] == id }.flatMap { row -> String? in
                if case .text(let name) = row[1] { return name }
                return nil
            } ?? "no team"
        }
        let join: Bool
        if players.isEmpty {
            join = true
        } else if isRosterChange {
            if players.count <= minimumPlayers {
                join = true
            } else if players.count >= maximumPlayers {
                join = false
            } else {
                join = dice[0] % 2 == 0
            }
            if !join {
                let player = pick(players, dice[1])
                try db.execute(sql: "DELETE FROM player WHERE id = ?", arguments: [player[0]])
                return "\(text(player[1])) left \(teamName(player[3]))"
            }
        } else {
            join = false
        }
        if join {
            let taken = Set(players.map { text($0[1]) })
            let free = names.filter { !taken.contains($0) }
            let name = free.isEmpty ? "Player \(players.count + 1)" : pick(free, dice[1])
            let team: DatabaseValue = teams.isEmpty ? .null : pick(teams, dice[2])[0]
            let score = Int(dice[3] % 40)
            try db.execute(
                sql: "INSERT INTO player (name, score, team_id) VALUES (?, ?, ?)", arguments: [name, score, team])
            return "\(name) joined \(teamName(team))"
        }
        let player = pick(players, dice[1])
        if dice[0] % 10 == 0 && teams.count > 1 {
            let others = teams.filter { $0[0] != player[3] }
            let team = pick(others, dice[2])[0]
            try db.execute(sql: "UPDATE player SET team_id = ? WHERE id = ?", arguments: [team, player[0]])
            return "\(text(player[1])) moved to \(teamName(team))"
        }
        guard case .integer(let score) = player[2] else { return "no write" }
        var delta = Int64(dice[2] % 31) - 8
        if delta == 0 || score + delta < 0 { delta = Int64(dice[3] % 10) + 1 }
        try db.execute(sql: "UPDATE player SET score = ? WHERE id = ?", arguments: [score + delta, player[0]])
        return "\(text(player[1])) \(delta > 0 ? "+" : "−")\(abs(delta)) (\(score + delta))"
    }

    private static func text(_ value: DatabaseValue) -> String {
        if case .text(let text) = value { return text }
        return value.description
    }
}
