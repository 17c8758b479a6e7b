import DBWatch
import Testing

@Suite("Transactions and savepoints")
struct TransactionTests {
    struct Boom: Error {}

    func names(_ queue: DatabaseQueue) async throws -> [String] {
        try await queue.read { db in try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY id") }
    }

    @Test func writeRollsBackOnError() async throws {
        let queue = try await makePlayerQueue()
        await #expect(throws: Boom.self) {
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO player (name) VALUES ('gone')")
                throw Boom()
            }
        }
        #expect(try await names(queue) == [])
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('kept')") }
        #expect(try await names(queue) == ["kept"])
    }

    @Test func failingStatementRollsBackWholeWrite() async throws {
        let queue = try await makePlayerQueue()
        await #expect(throws: SQLiteError.self) {
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO player (id, name) VALUES (1, 'a')")
                try db.execute(sql: "INSERT INTO player (id, name) VALUES (1, 'duplicate')")
            }
        }
        #expect(try await names(queue) == [])
    }

    @Test func transactionKinds() async throws {
        let queue = try await makePlayerQueue()
        for kind in [TransactionKind.deferred, .immediate, .exclusive] {
            try await queue.writeWithoutTransaction { db in
                try db.inTransaction(kind) {
                    #expect(db.isInsideTransaction)
                    try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: [kind.rawValue])
                }
                #expect(!db.isInsideTransaction)
                try? db.inTransaction(kind) {
                    try db.execute(sql: "INSERT INTO player (name) VALUES ('rolled back')")
                    throw Boom()
                }
            }
        }
        #expect(try await names(queue) == ["DEFERRED", "IMMEDIATE", "EXCLUSIVE"])
    }

    @Test func nestedSavepoints() async throws {
        let queue = try await makePlayerQueue()
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO player (name) VALUES ('outer')")
            try db.inSavepoint {
                try db.execute(sql: "INSERT INTO player (name) VALUES ('level 1')")
                try? db.inSavepoint {
                    try db.execute(sql: "INSERT INTO player (name) VALUES ('level 2, undone')")
                    throw Boom()
                }
                try db.inSavepoint {
                    try db.execute(sql: "INSERT INTO player (name) VALUES ('level 2, kept')")
                }
            }
            try? db.inSavepoint {
                try db.execute(sql: "INSERT INTO player (name) VALUES ('undone')")
                throw Boom()
            }
        }
        #expect(try await names(queue) == ["outer", "level 1", "level 2, kept"])
    }

    @Test func connectionUsableAfterRollback() async throws {
        let queue = try await makePlayerQueue()
        for _ in 0..<3 {
            await #expect(throws: Boom.self) {
                try await queue.write { db in
                    try db.execute(sql: "INSERT INTO player (name) VALUES ('x')")
                    throw Boom()
                }
            }
        }
        let inside = try await queue.write { db in db.isInsideTransaction }
        #expect(inside)
        let outside = try await queue.writeWithoutTransaction { db in db.isInsideTransaction }
        #expect(!outside)
    }

    @Test func readsCannotWrite() async throws {
        let queue = try await makePlayerQueue()
        await #expect(throws: SQLiteError.self) {
            try await queue.read { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('x')") }
        }
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('ok')") }
        #expect(try await names(queue) == ["ok"])
    }
}
