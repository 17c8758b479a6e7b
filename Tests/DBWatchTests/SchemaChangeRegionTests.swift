@testable import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

/// SQLite re-prepares a cached statement by itself, inside `sqlite3_step`,
/// when the schema it was compiled against changed (on another connection
/// of the pool, or in another process). What the re-prepared statement
/// reads and writes is what counts: an observation's region, the rows it
/// looks up by rowid, and what a write reports to observers.
@Suite("Regions after schema changes")
struct SchemaChangeRegionTests {
    /// A file queue or pool, with external change detection when asked.
    /// With one reader, a pool's refetches run on the connection that
    /// cached the observed statement before the schema changed.
    static func open(_ kind: DatabaseKind, path: String, detection: Bool = false, readers: Int? = nil) throws
        -> any DatabaseWriter
    {
        var configuration = Configuration()
        if detection { configuration.externalChangeDetection = ExternalChangeDetection() }
        if let readers { configuration.maximumReaderCount = readers }
        return try kind.open(at: path, configuration: configuration)
    }

    /// Waits until a commit published after `notified` reached the
    /// observation of `request` and its refetch ended.
    static func waitForRefetch<R: Queryable>(
        of request: R, on database: any DatabaseWriter, after notified: Int, fetches: Int
    ) async throws {
        try await waitUntil {
            guard let statistics = database.statistics(for: request) else { return false }
            return statistics.changesNotified > notified && statistics.fetches > fetches
        }
    }

    @Test(arguments: DatabaseKind.onFile, [1, 4])
    func aTableReplacedByAViewOnTheWriterKeepsBeingObserved(kind: DatabaseKind, readers: Int) async throws {
        try await withTemporaryDirectory { directory in
            let database = try Self.open(kind, path: directory.file("db.sqlite"), readers: readers)
            defer { database.syncClose() }
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, a); INSERT INTO t (a) VALUES (0)")
            }
            let request = SQLRequest("SELECT * FROM t ORDER BY id")
            let (values, task) = record(database.observe(request))
            defer { task.cancel() }
            try await values.wait { $0.last?.value?.count == 1 }
            try await database.write { db in
                try db.execute(sql: "ALTER TABLE t RENAME TO t_old; CREATE VIEW t AS SELECT id, a FROM t_old")
            }
            for count in 2...12 {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t_old (a) VALUES (?)", arguments: [count])
                }
                try await values.wait { $0.last?.value?.count == count }
            }
            // The view `t`, then its table.
            #expect(database.statistics(for: request)?.region.description == "main.t(a, id), main.t_old(a, id)")
        }
    }

    /// In one transaction, or in two (a fetch may then fail on the missing
    /// view in between).
    @Test(
        RequiredProgram.sqlite3.trait,
        arguments: DatabaseKind.onFile,
        [
            "BEGIN; DROP VIEW v; CREATE VIEW v AS SELECT x FROM b; COMMIT",
            "DROP VIEW v; CREATE VIEW v AS SELECT x FROM b",
        ])
    func aViewRedefinedByAnotherProcessIsFollowed(kind: DatabaseKind, redefinition: String) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let database = try Self.open(kind, path: path, detection: true, readers: 1)
            defer { database.syncClose() }
            try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE a (x); CREATE TABLE b (x); CREATE VIEW v AS SELECT x FROM a;
                        INSERT INTO a VALUES ('a0'); INSERT INTO b VALUES ('b0')
                        """)
            }
            let request = SQLRequest("SELECT x FROM v ORDER BY x")
            let (values, task) = record(database.observe(request))
            defer { task.cancel() }
            try await values.wait { $0.last?.value?.map(\.values) == [[.text("a0")]] }
            try await SQLiteShell.run(redefinition, on: path, busyTimeout: 5000)
            try await values.wait { $0.last?.value?.map(\.values) == [[.text("b0")]] }
            for index in 1...5 {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO b VALUES (?)", arguments: ["b\(index)"])
                }
                try await values.wait { $0.last?.value?.count == index + 1 }
            }
            #expect(database.statistics(for: request)?.region.description == "main.b(x), main.v(x)")
        }
    }

    @Test(RequiredProgram.sqlite3.trait, arguments: DatabaseKind.onFile)
    func rowIDLookupsFollowARedefinedView(kind: DatabaseKind) async throws {
        // `k` is first the rowid of `x` (a lookup by rowid: the region holds
        // one row), then a plain column (a scan: every row counts).
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let database = try Self.open(kind, path: path, detection: true, readers: 1)
            defer { database.syncClose() }
            try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE x (id INTEGER PRIMARY KEY, b); CREATE VIEW v AS SELECT id AS k, b FROM x;
                        INSERT INTO x VALUES (1, 1)
                        """)
            }
            let request = SQLRequest("SELECT count(*) FROM v WHERE k = ?", arguments: [1])
            let (values, task) = record(database.observe(request))
            defer { task.cancel() }
            try await values.wait { $0.last?.value?.first?[0] == .integer(1) }
            #expect(database.statistics(for: request)?.region.rowIDs == [TableName("x"): [1]])
            let before = try #require(database.statistics(for: request))
            try await SQLiteShell.run(
                "BEGIN; DROP VIEW v; CREATE VIEW v AS SELECT b AS k, b FROM x; COMMIT", on: path, busyTimeout: 5000)
            try await Self.waitForRefetch(
                of: request, on: database, after: before.changesNotified, fetches: before.fetches)
            try await database.write { db in try db.execute(sql: "INSERT INTO x VALUES (5, 1)") }
            try await values.wait { $0.last?.value?.first?[0] == .integer(2) }
            #expect(database.statistics(for: request)?.region.rowIDs == [:])
        }
    }

    @Test(RequiredProgram.sqlite3.trait, arguments: DatabaseKind.onFile)
    func aWriteRepreparedByATriggerChangeReportsTheColumnsItNowSets(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let database = try Self.open(kind, path: path, detection: true, readers: 1)
            defer { database.syncClose() }
            let update = "UPDATE w SET x = ? WHERE id = 1"
            try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE base (id INTEGER PRIMARY KEY, p, q); INSERT INTO base VALUES (1, 0, 0);
                        CREATE VIEW w AS SELECT id, p AS x FROM base;
                        CREATE TRIGGER w_update INSTEAD OF UPDATE ON w
                            BEGIN UPDATE base SET p = new.x WHERE id = old.id; END
                        """)
            }
            // The writer caches the update while the trigger sets `p`.
            try await database.write { db in try db.execute(sql: update, arguments: [1]) }
            let request = IntRequest("SELECT q FROM base")
            let (values, task) = record(database.observe(request))
            defer { task.cancel() }
            try await values.wait { $0.last?.value == 0 }
            let before = try #require(database.statistics(for: request))
            try await SQLiteShell.run(
                """
                BEGIN;
                DROP TRIGGER w_update;
                CREATE TRIGGER w_update INSTEAD OF UPDATE ON w BEGIN UPDATE base SET q = new.x WHERE id = old.id; END;
                COMMIT
                """, on: path, busyTimeout: 5000)
            try await Self.waitForRefetch(
                of: request, on: database, after: before.changesNotified, fetches: before.fetches)
            try await database.write { db in try db.execute(sql: update, arguments: [7]) }
            try await values.wait { $0.last?.value == 7 }
        }
    }

    @Test(RequiredProgram.sqlite3.trait, arguments: DatabaseKind.onFile)
    func aWriteRepreparedByANewTriggerReportsTheVirtualTableItNowWrites(kind: DatabaseKind) async throws {
        // The hooks see only FTS5's shadow tables: the write's footprint
        // names the virtual table.
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let database = try Self.open(kind, path: path, detection: true, readers: 1)
            defer { database.syncClose() }
            let insert = "INSERT INTO note (body) VALUES (?)"
            try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE note (id INTEGER PRIMARY KEY, body);
                        CREATE VIRTUAL TABLE search USING fts5(body)
                        """)
                try db.execute(sql: insert, arguments: ["before the trigger"])
            }
            let request = IntRequest("SELECT count(*) FROM search WHERE search MATCH 'apple'")
            let (values, task) = record(database.observe(request))
            defer { task.cancel() }
            try await values.wait { $0.last?.value == 0 }
            let before = try #require(database.statistics(for: request))
            try await SQLiteShell.run(
                "CREATE TRIGGER note_insert AFTER INSERT ON note BEGIN INSERT INTO search (body) VALUES (new.body); END",
                on: path, busyTimeout: 5000)
            try await Self.waitForRefetch(
                of: request, on: database, after: before.changesNotified, fetches: before.fetches)
            try await database.write { db in try db.execute(sql: insert, arguments: ["an apple"]) }
            try await values.wait { $0.last?.value == 1 }
        }
    }

    @Test func aStatementRepreparedByAnotherConnectionTakesItsNewFootprint() async throws {
        try await withTemporaryDirectory { directory in
            let pool = try Self.open(.pool, path: directory.file("db.sqlite"), readers: 1)
            defer { pool.syncClose() }
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE a (x); CREATE VIEW v AS SELECT x FROM a")
            }
            let sql = "SELECT * FROM v"
            let first = try await pool.read { db in
                _ = try db.fetchAll(sql: sql)
                return try db.cachedStatement(sql: sql).footprint.reads.description
            }
            #expect(first == "main.a(x), main.v(x)")
            // The view follows the rename: it reads `a_old` now.
            try await pool.write { db in
                try db.execute(sql: "ALTER TABLE a RENAME TO a_old; ALTER TABLE a_old RENAME x TO y")
            }
            let (names, region) = try await pool.read { db in
                let statement = try db.cachedStatement(sql: sql)
                _ = try db.fetchAll(sql: sql)
                return (statement.columnNames, statement.footprint.reads.description)
            }
            #expect(names == ["y"])
            #expect(region == "main.a_old(y), main.v(y)")
        }
    }

    @Test func aStatementThatFailsAfterItsReprepareKeepsItsError() async throws {
        // What a re-prepare records (the region, the rowid lookups) runs SQL
        // of its own: the failed step's message must survive it.
        try await withTemporaryDirectory { directory in
            let pool = try Self.open(.pool, path: directory.file("db.sqlite"), readers: 1)
            defer { pool.syncClose() }
            try await pool.write { db in
                try db.execute(
                    sql: "CREATE TABLE a (x); INSERT INTO a VALUES (1); CREATE VIEW v AS SELECT abs(x) FROM a")
            }
            let request = SQLRequest("SELECT * FROM v")
            let (values, task) = record(pool.observe(request))
            defer { task.cancel() }
            try await values.wait { $0.last?.value?.count == 1 }
            // Any schema change makes SQLite re-prepare the reader's statement.
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE other (y); UPDATE a SET x = -9223372036854775807 - 1")
            }
            try await values.wait { $0.last?.value == nil }
            guard case .failure(let error as SQLiteError)? = values.values.last else {
                Issue.record("expected an SQLite error, got \(String(describing: values.values.last))")
                return
            }
            #expect(error.message == "integer overflow")
        }
    }
}
