import DBWatch
import DBWatchTestSupport
import Testing

@Suite("Transactions and savepoints")
struct TransactionTests {
    struct Boom: Error {}

    func names(_ queue: DatabaseQueue) async throws -> [String] {
        try await queue.read { db in try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY id") }
    }

    /// Expects `body` to throw a ``ResultCode/misuse`` error.
    func expectMisuse(
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async {
        let error = await #expect(throws: SQLiteError.self, sourceLocation: sourceLocation) { try await body() }
        #expect(error?.code == .misuse, sourceLocation: sourceLocation)
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

    /// The transaction of `write` and `read` belongs to the library: SQL
    /// that would end it early (and keep what a throwing closure wrote) is
    /// refused before it runs, however the statement was prepared.
    @Test(arguments: ["COMMIT", "END", "ROLLBACK", "BEGIN"])
    func transactionControlInsideWriteIsRefused(sql: String) async throws {
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            defer { pool.syncClose() }
            try await pool.write { db in try db.execute(sql: playerSchema) }
            for database in [try await makePlayerQueue(), pool] as [any DatabaseWriter] {
                await expectMisuse {
                    try await database.write { db in
                        try db.execute(sql: "INSERT INTO player (name) VALUES ('early')")
                        try db.execute(sql: sql)
                        try db.execute(sql: "INSERT INTO player (name) VALUES ('late')")
                    }
                }
                let count = try await database.read { db in
                    try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player")
                }
                #expect(count == 0)
                // A statement prepared outside, where it is allowed, is refused inside too.
                try await database.writeWithoutTransaction { db in
                    try db.cachedStatement(sql: "BEGIN").execute()
                    try db.cachedStatement(sql: "COMMIT").execute()
                }
                await expectMisuse {
                    try await database.write { db in
                        try db.execute(sql: "INSERT INTO player (name) VALUES ('cached')")
                        try db.cachedStatement(sql: "COMMIT").execute()
                    }
                }
                #expect(
                    try await database.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") } == 0
                )
            }
        }
    }

    @Test func aReadCannotCommitItsWayToAWrite() async throws {
        let queue = try await makePlayerQueue()
        await expectMisuse {
            try await queue.read { db in
                try db.execute(sql: "COMMIT; PRAGMA query_only = 0; INSERT INTO player (name) VALUES ('sneaky')")
            }
        }
        #expect(try await names(queue) == [])
    }

    @Test func savepointsInSQLStayAllowedInsideWrite() async throws {
        let queue = try await makePlayerQueue()
        try await queue.write { db in
            // EXPLAIN runs nothing: allowed too.
            _ = try db.fetchAll(sql: "EXPLAIN COMMIT")
            try db.execute(sql: "INSERT INTO player (name) VALUES ('kept')")
            try db.execute(sql: "SAVEPOINT s; INSERT INTO player (name) VALUES ('undone'); ROLLBACK TO s; RELEASE s")
        }
        #expect(try await names(queue) == ["kept"])
    }

    @Test func writeWithoutTransactionManagesTransactionsButMayNotLeaveOneOpen() async throws {
        let queue = try await makePlayerQueue()
        try await queue.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE; INSERT INTO player (name) VALUES ('committed'); COMMIT")
        }
        await expectMisuse {
            try await queue.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE; INSERT INTO player (name) VALUES ('left open')")
            }
        }
        await #expect(throws: Boom.self) {
            try await queue.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE; INSERT INTO player (name) VALUES ('thrown')")
                throw Boom()
            }
        }
        // The connection is usable, and only the committed row is there.
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('after')") }
        #expect(try await names(queue) == ["committed", "after"])
    }
}
