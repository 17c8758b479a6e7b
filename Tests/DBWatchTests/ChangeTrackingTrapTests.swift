@testable import DBWatch
import DBWatchTestSupport
import Testing

/// The SQLite traps of ../shared/design/observation.md: each one would make
/// a naive change tracker miss a change (or report a false one).
@Suite("Change tracking traps")
struct ChangeTrackingTrapTests {
    /// Observes `sql` on a fresh in-memory queue prepared with `schema`,
    /// applies `write`, and waits for the value to become `expected`.
    func expectChange(
        schema: String, observe sql: String, write: String, expected: [[DatabaseValue]],
        on database: (any DatabaseWriter)? = nil
    ) async throws {
        let database = try database ?? DatabaseQueue()
        try await database.write { db in try db.execute(sql: schema) }
        let (recorder, task) = record(database.observe(SQLRequest(sql)))
        defer { task.cancel() }
        try await recorder.wait(forCount: 1)
        try await database.writeWithoutTransaction(write)
        try await recorder.wait { $0.last?.value?.map(\.values) == expected }
    }

    @Test func truncatingDeleteIsSeen() async throws {
        // `DELETE FROM t` with no WHERE uses the truncate optimization: no hook call.
        try await expectChange(
            schema: "CREATE TABLE t (a); INSERT INTO t VALUES (1), (2)",
            observe: "SELECT count(*) FROM t", write: "DELETE FROM t", expected: [[.integer(0)]])
    }

    @Test func truncatingDeleteCachedBeforeObservationIsSeen() async throws {
        // The pre-update hook disables the optimization only for statements
        // compiled while it is installed: this DELETE is compiled and cached
        // on the pool's writer while nothing observes.
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)")
                try db.execute(sql: "DELETE FROM t")
                try db.execute(sql: "INSERT INTO t VALUES (1), (2)")
            }
            let (values, task) = record(pool.observe(IntRequest("SELECT count(*) FROM t")))
            defer { task.cancel() }
            try await values.wait { $0.last?.value == 2 }
            try await pool.write { db in try db.execute(sql: "DELETE FROM t") }
            try await values.wait { $0.last?.value == 0 }
            await pool.close()
        }
    }

    @Test func withoutRowIDInsertIsSeen() async throws {
        try await expectChange(
            schema: "CREATE TABLE w (k TEXT PRIMARY KEY, v) WITHOUT ROWID",
            observe: "SELECT k, v FROM w", write: "INSERT INTO w VALUES ('a', 1)",
            expected: [[.text("a"), .integer(1)]])
    }

    @Test func withoutRowIDUpdateAndDeleteAreSeen() async throws {
        let queue = try DatabaseQueue()
        try await expectChange(
            schema: "CREATE TABLE w (k TEXT PRIMARY KEY, v) WITHOUT ROWID; INSERT INTO w VALUES ('a', 1), ('b', 2)",
            observe: "SELECT v FROM w ORDER BY k", write: "UPDATE w SET v = 5 WHERE k = 'b'",
            expected: [[.integer(1)], [.integer(5)]], on: queue)
    }

    @Test func replaceDeleteIsSeen() async throws {
        // The implicit delete of the conflicting row reaches no update hook.
        try await expectChange(
            schema: "CREATE TABLE u (id INTEGER PRIMARY KEY, x UNIQUE, label); INSERT INTO u VALUES (1, 1, 'old')",
            observe: "SELECT count(*) FROM u WHERE id = 1",
            write: "INSERT OR REPLACE INTO u (x, label) VALUES (1, 'new')", expected: [[.integer(0)]])
    }

    @Test func upsertIsSeen() async throws {
        try await expectChange(
            schema: "CREATE TABLE u (id INTEGER PRIMARY KEY, x UNIQUE, n); INSERT INTO u VALUES (1, 1, 0)",
            observe: "SELECT n FROM u",
            write: "INSERT INTO u (x, n) VALUES (1, 0) ON CONFLICT (x) DO UPDATE SET n = n + 1",
            expected: [[.integer(1)]])
    }

    @Test func triggerWritesAreSeen() async throws {
        try await expectChange(
            schema: """
                CREATE TABLE t (a); CREATE TABLE audit (n INTEGER);
                CREATE TRIGGER t_audit AFTER INSERT ON t BEGIN INSERT INTO audit VALUES (new.a); END;
                """,
            observe: "SELECT n FROM audit", write: "INSERT INTO t VALUES (7)", expected: [[.integer(7)]])
    }

    @Test func foreignKeyCascadeIsSeen() async throws {
        try await expectChange(
            schema: """
                CREATE TABLE team (id INTEGER PRIMARY KEY);
                CREATE TABLE member (id INTEGER PRIMARY KEY, team_id REFERENCES team (id) ON DELETE CASCADE);
                INSERT INTO team VALUES (1); INSERT INTO member VALUES (1, 1), (2, 1);
                """,
            observe: "SELECT count(*) FROM member", write: "DELETE FROM team WHERE id = 1", expected: [[.integer(0)]])
    }

    @Test func viewReadsUnderlyingTables() async throws {
        let queue = try DatabaseQueue()
        try await expectChange(
            schema: """
                CREATE TABLE t (a); CREATE VIEW big AS SELECT a FROM t WHERE a > 10;
                """,
            observe: "SELECT a FROM big", write: "INSERT INTO t VALUES (11)", expected: [[.integer(11)]], on: queue)
        let region = try await queue.read { db in try db.region(of: "SELECT a FROM big") }
        #expect(region.tables.keys.contains(TableName("t")))
    }

    /// The authorizer reports a read of a generated column, not of the
    /// columns it is computed from, which are what an UPDATE sets.
    @Test(arguments: ["VIRTUAL", "STORED"], DatabaseKind.queueAndPool)
    func generatedColumnsFollowTheirSources(storage: String, kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try kind.open(in: directory)
            defer { database.syncClose() }
            try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE item (id INTEGER PRIMARY KEY, price INT, qty INT, note TEXT,
                                           total INT AS (price * qty) \(storage));
                        INSERT INTO item (price, qty) VALUES (10, 1), (3, 1);
                        CREATE VIEW big AS SELECT id FROM item WHERE total >= 20;
                        """)
            }
            let queries = [
                "SELECT sum(total) FROM item", "SELECT count(*) FROM big", "SELECT total FROM item WHERE id = 1",
            ]
            var recorders: [ValueRecorder<Result<Int, any Error>>] = []
            var tasks: [Task<Void, Never>] = []
            defer { for task in tasks { task.cancel() } }
            for sql in queries {
                let (recorder, task) = record(database.observe(IntRequest(sql)))
                recorders.append(recorder)
                tasks.append(task)
            }
            for recorder in recorders { try await recorder.wait(forCount: 1) }
            try await database.write { db in try db.execute(sql: "UPDATE item SET qty = 5 WHERE id = 1") }
            try await recorders[0].wait { $0.last?.value == 53 }
            try await recorders[1].wait { $0.last?.value == 1 }
            try await recorders[2].wait { $0.last?.value == 50 }
            // Columns stay precise where no generated column is read.
            let (plain, plainTask) = record(database.observe(IntRequest("SELECT sum(price) FROM item")))
            defer { plainTask.cancel() }
            try await plain.wait(forCount: 1)
            try await database.write { db in try db.execute(sql: "UPDATE item SET note = 'x'") }
            try await waitUntil {
                database.statistics(for: IntRequest("SELECT sum(total) FROM item"))?.changesNotified == 2
            }
            #expect(database.statistics(for: IntRequest("SELECT sum(price) FROM item"))?.changesSkipped == 1)
        }
    }

    /// A generated column added while pool readers are open: what they knew
    /// of the table's columns must not hide it.
    @Test func aGeneratedColumnAddedLaterIsFollowedToo() async throws {
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            defer { pool.syncClose() }
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE t (a INT, b INT); INSERT INTO t VALUES (1, 1)")
            }
            // Every reader reads a column of t first.
            try await withThrowingTaskGroup { group in
                for _ in 0..<16 {
                    group.addTask {
                        _ = try await pool.read { db in try db.fetchAll(Int.self, sql: "SELECT a FROM t") }
                    }
                }
                try await group.waitForAll()
            }
            try await pool.write { db in try db.execute(sql: "ALTER TABLE t ADD COLUMN g INT AS (b * 10)") }
            let (values, task) = record(pool.observe(IntRequest("SELECT g FROM t")))
            defer { task.cancel() }
            try await values.wait { $0.last?.value == 10 }
            try await pool.write { db in try db.execute(sql: "UPDATE t SET b = 5") }
            try await values.wait { $0.last?.value == 50 }
        }
    }

    @Test func fts5WritesAreSeen() async throws {
        // Written through shadow tables whose names differ from the one queried.
        try await expectChange(
            schema: "CREATE VIRTUAL TABLE doc USING fts5 (body)",
            observe: "SELECT body FROM doc WHERE doc MATCH 'hello'", write: "INSERT INTO doc VALUES ('hello world')",
            expected: [[.text("hello world")]])
    }

    @Test func savepointRollbackKeepsEarlierChanges() async throws {
        // ROLLBACK TO undoes changes the hooks already reported; no rollback hook runs.
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a); CREATE TABLE s (b)") }
        let (values, task) = record(
            queue.observe(SQLRequest("SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM s)")))
        defer { task.cancel() }
        try await values.wait(forCount: 1)
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO t VALUES (1)")
            try? db.inSavepoint {
                try db.execute(sql: "INSERT INTO s VALUES (1)")
                throw CancellationError()
            }
        }
        try await values.wait { $0.last?.value?.first?.values == [.integer(1), .integer(0)] }
        #expect(values.values.compactMap(\.value).allSatisfy { $0.first?.values[1] == .integer(0) })
    }

    @Test func savepointRolledBackAloneProducesNoValue() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a)") }
        let (values, task) = record(queue.observe(IntRequest("SELECT count(*) FROM t")))
        defer { task.cancel() }
        try await values.wait(forCount: 1)
        try await queue.writeWithoutTransaction { db in
            try db.execute(sql: "SAVEPOINT a; INSERT INTO t VALUES (1); ROLLBACK TO a; RELEASE a")
        }
        try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES (2), (3)") }
        try await values.wait { $0.last?.value == 2 }
        #expect(values.values.compactMap(\.value) == [0, 2])
    }

    @Test func schemaChangesRefetchEverything() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)") }
        let (values, task) = record(queue.observe(SQLRequest("SELECT * FROM t")))
        defer { task.cancel() }
        try await values.wait(forCount: 1)
        try await queue.write { db in try db.execute(sql: "ALTER TABLE t ADD COLUMN b DEFAULT 9") }
        try await values.wait { $0.last?.value?.first?.columnNames == ["a", "b"] }
    }

    @Test func schemasAreSeparate() async throws {
        // main.t is not temp.t: a write to one does not refetch the other.
        let queue = try DatabaseQueue()
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a); CREATE TEMP TABLE t (a)")
        }
        let request = IntRequest("SELECT count(*) FROM main.t")
        let (values, task) = record(queue.observe(request))
        defer { task.cancel() }
        try await values.wait(forCount: 1)
        try await queue.write { db in try db.execute(sql: "INSERT INTO temp.t VALUES (1)") }
        try await queue.write { db in try db.execute(sql: "INSERT INTO main.t VALUES (1), (2)") }
        try await values.wait { $0.last?.value == 2 }
        let statistics = try #require(queue.statistics(for: request))
        #expect(statistics.fetches == 2)
        #expect(statistics.region.tables.keys.contains(TableName("t", schema: "main")))
    }

    @Test func attachedDatabasesAreTracked() async throws {
        try await withTemporaryDirectory { directory in
            let queue = try DatabaseQueue()
            try await queue.writeWithoutTransaction { db in
                try db.execute(sql: "ATTACH DATABASE ? AS aux", arguments: [directory.file("aux.sqlite")])
                try db.execute(sql: "CREATE TABLE aux.log (a); CREATE TABLE main.log (a)")
            }
            let request = IntRequest("SELECT count(*) FROM aux.log")
            let (values, task) = record(queue.observe(request))
            defer { task.cancel() }
            try await values.wait(forCount: 1)
            try await queue.write { db in try db.execute(sql: "INSERT INTO main.log VALUES (1)") }
            try await queue.write { db in try db.execute(sql: "INSERT INTO aux.log VALUES (1)") }
            try await values.wait { $0.last?.value == 1 }
            #expect(queue.statistics(for: request)?.fetches == 2)
        }
    }

    /// `ATTACH` and `DETACH` run outside any transaction: no commit follows
    /// them, yet they change what a name such as `aux.t` reads.
    @Test func attachAndDetachRefetchAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            for (file, rows) in [("a.sqlite", "('a')"), ("b.sqlite", "('b1'), ('b2')")] {
                let other = try DatabaseQueue(path: directory.file(file))
                try await other.write { db in try db.execute(sql: "CREATE TABLE t (x); INSERT INTO t VALUES \(rows)") }
                await other.close()
            }
            let queue = try DatabaseQueue()
            defer { queue.syncClose() }
            let (values, task) = record(queue.observe(SQLRequest("SELECT x FROM aux.t ORDER BY x")))
            defer { task.cancel() }
            try await values.wait { $0.last.map { (try? $0.get()) == nil } ?? false }
            try await queue.writeWithoutTransaction { db in
                try db.execute(sql: "ATTACH DATABASE ? AS aux", arguments: [directory.file("a.sqlite")])
            }
            try await values.wait { $0.last?.value?.map(\.values) == [[.text("a")]] }
            try await queue.writeWithoutTransaction { db in
                try db.execute(sql: "DETACH DATABASE aux")
                try db.execute(sql: "ATTACH DATABASE ? AS aux", arguments: [directory.file("b.sqlite")])
            }
            try await values.wait { $0.last?.value?.map(\.values) == [[.text("b1")], [.text("b2")]] }
            try await queue.writeWithoutTransaction { db in try db.execute(sql: "DETACH DATABASE aux") }
            try await values.wait { $0.last.map { (try? $0.get()) == nil } ?? false }
        }
    }

    @Test func countStarObservesTheTable() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a, b)") }
        let region = try await queue.read { db in try db.region(of: "SELECT count(*) FROM t") }
        #expect(region.tables[TableName("t")] == .rows)
        // Updates cannot change the number of rows: no refetch for them.
        let request = IntRequest("SELECT count(*) FROM t")
        let (values, task) = record(queue.observe(request))
        defer { task.cancel() }
        try await values.wait(forCount: 1)
        try await queue.write { db in try db.execute(sql: "INSERT INTO t (a) VALUES (1)") }
        try await queue.write { db in try db.execute(sql: "UPDATE t SET b = 2") }
        try await queue.write { db in try db.execute(sql: "DELETE FROM t") }
        try await values.wait { $0.last?.value == 0 }
        #expect(queue.statistics(for: request)?.changesNotified == 2)
    }

    @Test func countStarOnTempAndAttachedTables() async throws {
        let queue = try DatabaseQueue()
        try await queue.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ':memory:' AS aux")
            try db.execute(sql: "CREATE TEMP TABLE scratch (a); CREATE TABLE aux.log (a)")
        }
        let regions = try await queue.read { db in
            [try db.region(of: "SELECT count(*) FROM scratch"), try db.region(of: "SELECT count(*) FROM aux.log")]
        }
        #expect(regions[0].tables[TableName("scratch", schema: "temp")] == .rows)
        #expect(regions[1].description == "aux.log(rows)")
        let (values, task) = record(queue.observe(IntRequest("SELECT count(*) FROM scratch")))
        defer { task.cancel() }
        try await values.wait(forCount: 1)
        try await queue.write { db in try db.execute(sql: "INSERT INTO scratch VALUES (1)") }
        try await values.wait { $0.last?.value == 1 }
    }

    @Test func theSchemaTableHasOneNameWhateverAliasTheSQLUses() async throws {
        let queue = try DatabaseQueue()
        let regions = try await queue.read { db in
            try [
                "SELECT 1 FROM sqlite_schema", "SELECT name FROM sqlite_schema", "SELECT count(*) FROM sqlite_master",
                "SELECT 1 FROM sqlite_temp_schema", "SELECT name FROM sqlite_temp_master",
                "SELECT 1 FROM temp.sqlite_master",
            ].map { try db.region(of: $0).tables.keys.map(\.description) }
        }
        #expect(regions.prefix(3).allSatisfy { $0 == ["main.sqlite_master"] }, "\(regions)")
        #expect(regions.suffix(3).allSatisfy { $0 == ["temp.sqlite_temp_master"] }, "\(regions)")
    }

    @Test func failedCommitPublishesNothing() async throws {
        // A deferred foreign key makes COMMIT itself fail. SQLite checks it
        // before it calls the commit hook; FailedCommitTests covers commits
        // that fail after the hook (a full disk).
        let queue = try DatabaseQueue()
        try await queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE parent (id INTEGER PRIMARY KEY);
                    CREATE TABLE child (id INTEGER PRIMARY KEY,
                        parent_id REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
                    """)
        }
        let request = IntRequest("SELECT count(*) FROM child")
        let (values, task) = record(queue.observe(request))
        defer { task.cancel() }
        try await values.wait(forCount: 1)
        await #expect(throws: SQLiteError.self) {
            try await queue.write { db in try db.execute(sql: "INSERT INTO child VALUES (1, 99)") }
        }
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO parent VALUES (1); INSERT INTO child VALUES (2, 1)")
        }
        try await values.wait { $0.last?.value == 1 }
        #expect(values.values.compactMap(\.value) == [0, 1])
    }
}

extension DatabaseWriter {
    /// Runs a script outside an explicit transaction.
    func writeWithoutTransaction(_ sql: String) async throws {
        try await writeWithoutTransaction { db in try db.execute(sql: sql) }
    }
}
