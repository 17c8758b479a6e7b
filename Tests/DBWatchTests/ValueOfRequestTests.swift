import DBWatch
import DBWatchTestSupport
import Testing

/// `value(of:)`: one fetch of a request, without observing it.
@Suite("One-shot fetch of a request")
struct ValueOfRequestTests {
    /// The rows of a table as any `Decodable` type: a generic request, whose
    /// `defaultValue` is computed (a generic type cannot have a stored `static let`).
    struct AllRows<Record: Decodable & Hashable & Sendable>: Queryable {
        static var defaultValue: [Record] { [] }
        var table: String
        func fetch(_ db: Database) throws -> [Record] {
            try db.fetchAll(Record.self, sql: "SELECT * FROM \(table) ORDER BY id")
        }
    }

    /// A request that writes: it must fail, as an observation's fetch would.
    struct Writing: Queryable {
        static let defaultValue = 0
        func fetch(_ db: Database) throws -> Int {
            try db.execute(sql: "INSERT INTO player (name) VALUES ('intruder')")
            return 1
        }
    }

    static func open(_ kind: DatabaseKind, in directory: TemporaryDirectory) async throws -> any DatabaseWriter {
        let database = try kind.open(in: directory)
        try await database.write { db in
            try db.execute(sql: playerSchema)
            try db.execute(sql: "INSERT INTO player (name, score) VALUES ('ann', 3), ('bob', 5)")
        }
        return database
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func fetchesTheCommittedValueOnce(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let players = try await withTimeout { try await database.value(of: AllRows<Player>(table: "player")) }
            #expect(players.map(\.name) == ["ann", "bob"])
            #expect(try await database.value(of: PlayerNames()) == ["ann", "bob"])
            // Nothing keeps observing it.
            #expect(database.observationCount == 0)
            #expect(database.statistics(for: PlayerNames()) == nil)
            try await database.write { db in try db.execute(sql: "DELETE FROM player WHERE name = 'ann'") }
            #expect(try await database.value(of: PlayerNames()) == ["bob"])
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func throwsTheFetchErrorAndRunsReadOnly(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            await #expect {
                _ = try await database.value(of: IntRequest("SELECT count(*) FROM missing"))
            } throws: { error in
                (error as? SQLiteError)?.message == "no such table: missing"
            }
            await #expect {
                _ = try await database.value(of: Writing())
            } throws: { error in
                ResultCode.readOnly ~= error
            }
            #expect(try await database.value(of: PlayerNames()) == ["ann", "bob"])
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func aClosedDatabaseThrowsTheClosedError(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            await database.close()
            await #expect {
                _ = try await database.value(of: PlayerNames())
            } throws: { error in
                (error as? SQLiteError)?.isDatabaseClosed == true
            }
        }
    }
}
