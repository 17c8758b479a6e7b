import DBWatch
import DBWatchTestSupport
import Testing

@Suite("Statement cache")
struct StatementCacheTests {
    @Test func statementsAreReused() async throws {
        let queue = try DatabaseQueue()
        let same = try await queue.read { db in
            try db.cachedStatement(sql: "SELECT 1") === db.cachedStatement(sql: "SELECT 1")
        }
        #expect(same)
    }

    @Test func explainStatementsAreRecognized() async throws {
        let queue = try DatabaseQueue()
        let kinds = try await queue.read { db in
            try ["SELECT 1", "EXPLAIN SELECT 1", "  explain query plan SELECT 1"].map {
                try db.cachedStatement(sql: $0).isExplain
            }
        }
        #expect(kinds == [false, true, true])
    }

    @Test func parameterNamesAreListedInOrder() async throws {
        let queue = try DatabaseQueue()
        let names = try await queue.read { db in
            try db.cachedStatement(sql: "SELECT :a, ?, @b, :a, $c, ?5").parameterNames
        }
        // `?` is parameter 2; the second `:a` reuses parameter 1.
        #expect(names == [":a", nil, "@b", "$c", "?5"])
    }

    @Test func schemaChangeOnSameConnection() async throws {
        let queue = try DatabaseQueue()
        let (before, after) = try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)")
            let before = try db.fetchOne(sql: "SELECT * FROM t")!
            let statement = try db.cachedStatement(sql: "SELECT * FROM t")
            try db.execute(sql: "ALTER TABLE t ADD COLUMN b DEFAULT 2")
            #expect(try db.cachedStatement(sql: "SELECT * FROM t") !== statement)
            return (before, try db.fetchOne(sql: "SELECT * FROM t")!)
        }
        #expect(before.columnNames == ["a"])
        #expect(after.columnNames == ["a", "b"])
        #expect(after.values == [.integer(1), .integer(2)])
    }

    @Test func schemaChangeByAnotherConnection() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = Configuration()
            configuration.maximumReaderCount = 1
            let pool = try DatabasePool(path: directory.file("db.sqlite"), configuration: configuration)
            try await pool.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)") }
            let before = try await pool.read { db in try db.fetchOne(sql: "SELECT * FROM t")! }
            try await pool.write { db in try db.execute(sql: "ALTER TABLE t ADD COLUMN b DEFAULT 2") }
            // The reader's cached statement is re-prepared by SQLite; its columns follow.
            let after = try await pool.read { db in try db.fetchOne(sql: "SELECT * FROM t")! }
            #expect(before.columnNames == ["a"])
            #expect(after.columnNames == ["a", "b"])
            #expect(after.values == [.integer(1), .integer(2)])
            let decoded = try await pool.read { db in try db.fetchAll(Int.self, sql: "SELECT b FROM t") }
            #expect(decoded == [2])
        }
    }

    @Test func droppedTableIsAnErrorThenRecovers() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)") }
        _ = try await queue.read { db in try db.fetchAll(sql: "SELECT a FROM t") }
        try await queue.write { db in try db.execute(sql: "DROP TABLE t") }
        await #expect(throws: SQLiteError.self) {
            try await queue.read { db in try db.fetchAll(sql: "SELECT a FROM t") }
        }
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (5)") }
        let values = try await queue.read { db in try db.fetchAll(Int.self, sql: "SELECT a FROM t") }
        #expect(values == [5])
    }
}

@Suite("Column origins")
struct ColumnOriginTests {
    @Test func originsAndPrimaryKeys() async throws {
        let queue = try await makePlayerQueue()
        let origins = try await queue.read { db in
            try db.cachedStatement(sql: "SELECT id, name, score * 2 AS twice, rowid FROM player").columnOrigins
        }
        #expect(origins[0]?.table == "player")
        #expect(origins[0]?.column == "id")
        #expect(origins[0]?.schema == "main")
        #expect(origins[0]?.isPrimaryKey == true)
        #expect(origins[1]?.isPrimaryKey == false)
        #expect(origins[2] == nil)
        #expect(origins[3]?.isPrimaryKey == true)
    }
}
