import DBWatch
import Testing

@Suite("Statement arguments")
struct ArgumentTests {
    @Test func positionalAndNamed() async throws {
        let queue = try await makePlayerQueue()
        let players = try await queue.write { db in
            try db.execute(sql: "INSERT INTO player (id, name, score) VALUES (?, ?, ?)", arguments: [1, "Arthur", 10])
            try db.execute(
                sql: "INSERT INTO player (id, name, score) VALUES (:id, :name, :score)",
                arguments: [":id": 2, ":name": "Barbara", ":score": 20])
            try db.execute(
                sql: "INSERT INTO player (id, name, score) VALUES (@id, @name, @score)",
                arguments: ["@id": 3, "@name": "Craig", "@score": 30])
            try db.execute(
                sql: "INSERT INTO player (id, name, score) VALUES ($id, $name, $score)",
                arguments: ["id": 4, "name": "Dana", "score": 40])
            try db.execute(sql: "INSERT INTO player (id, name, score) VALUES (?2, ?1, ?3)", arguments: ["Eve", 5, 50])
            return try db.fetchAll(Player.self, sql: "SELECT * FROM player ORDER BY id")
        }
        #expect(players.map(\.name) == ["Arthur", "Barbara", "Craig", "Dana", "Eve"])
        #expect(players.map(\.score) == [10, 20, 30, 40, 50])
    }

    @Test func nullArgument() async throws {
        let queue = try DatabaseQueue()
        let value = try await queue.read { db in try db.fetchOne(sql: "SELECT ?", arguments: [nil])![0] }
        #expect(value == .null)
    }

    @Test func wrongCountIsAnError() async throws {
        let queue = try await makePlayerQueue()
        for arguments: StatementArguments in [[], [1], [1, "a", 3, 4]] {
            await #expect(throws: SQLiteError.self) {
                try await queue.write { db in
                    try db.execute(sql: "INSERT INTO player (id, name, score) VALUES (?, ?, ?)", arguments: arguments)
                }
            }
        }
        do {
            try await queue.read { db in _ = try db.fetchAll(sql: "SELECT ?", arguments: [1, 2]) }
            Issue.record("expected an error")
        } catch let error as SQLiteError {
            #expect(error.code == .misuse)
            #expect(error.message?.contains("wrong number of arguments") == true)
        }
        let count = try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
        #expect(count == 0)
        // The count is exact for one statement; a script's later statements may need more.
        func message(_ sql: String) async -> String? {
            do {
                try await queue.write { db in try db.execute(sql: sql) }
                return nil
            } catch {
                return (error as? SQLiteError)?.message
            }
        }
        #expect(await message("SELECT ?") == "wrong number of arguments: the SQL needs 1, got 0")
        #expect(await message("SELECT ?; SELECT 1") == "wrong number of arguments: the SQL needs at least 1, got 0")
    }

    @Test func unknownOrMissingNameIsAnError() async throws {
        let queue = try DatabaseQueue()
        await #expect(throws: SQLiteError.self) {
            try await queue.read { db in try db.fetchOne(sql: "SELECT :a", arguments: [":a": 1, ":b": 2]) }
        }
        await #expect(throws: SQLiteError.self) {
            try await queue.read { db in try db.fetchOne(sql: "SELECT :a, :b", arguments: [":a": 1]) }
        }
        await #expect(throws: SQLiteError.self) {
            try await queue.read { db in try db.fetchOne(sql: "SELECT ?", arguments: [":a": 1]) }
        }
    }

    @Test func scriptsConsumeArgumentsInOrder() async throws {
        let queue = try await makePlayerQueue()
        let names = try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO player (name) VALUES (?);  -- first
                    INSERT INTO player (name) VALUES ('fixed; with semicolon');
                    INSERT INTO player (name) VALUES (?);
                    """, arguments: ["a", "b"])
            return try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY id")
        }
        #expect(names == ["a", "fixed; with semicolon", "b"])
        await #expect(throws: SQLiteError.self) {
            try await queue.write { db in
                try db.execute(
                    sql: "INSERT INTO player (name) VALUES (?); INSERT INTO player (name) VALUES (?)",
                    arguments: ["only one"])
            }
        }
    }

    @Test func injectionIsInert() async throws {
        let queue = try await makePlayerQueue()
        let hostile = "x'); DROP TABLE player; --"
        let name = try await queue.write { db in
            try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: [hostile])
            return try db.fetchOne(String.self, sql: "SELECT name FROM player")
        }
        #expect(name == hostile)
    }
}
