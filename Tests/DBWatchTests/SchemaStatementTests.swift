@testable import DBWatch
import DBWatchTestSupport
import Testing

/// Schema statements do what they say: the authorizer that tracks changes
/// answers `SQLITE_IGNORE` to deletes (so that a `DELETE` without `WHERE`
/// reaches the hooks), and must never make SQLite skip a `DROP` or an
/// `ALTER` instead. Each statement is checked against the schema tables.
@Suite("Schema statements: drops and alters take effect")
struct SchemaStatementTests {
    /// Every kind of schema object, in `main` and in `temp`.
    static let schema = """
        CREATE TABLE t (id INTEGER PRIMARY KEY, a, extra);
        CREATE VIEW v AS SELECT a FROM t;
        CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END;
        CREATE INDEX i ON t (a);
        CREATE VIRTUAL TABLE f USING fts5 (body);
        CREATE TABLE gone (x);
        CREATE TEMP TABLE tt (x);
        CREATE INDEX temp.ti ON tt (x);
        CREATE TEMP VIEW tv AS SELECT a FROM t;
        CREATE TEMP TRIGGER ttr AFTER INSERT ON t BEGIN SELECT 1; END;
        CREATE VIRTUAL TABLE temp.tf USING fts5 (body);
        """

    /// A drop statement and the objects it removes (`temp.` for temporary ones).
    struct Drop: Sendable, CustomTestStringConvertible {
        let sql: String
        let removes: Set<String>
        var testDescription: String { sql }
    }

    static let fts = ["f", "f_config", "f_content", "f_data", "f_docsize", "f_idx"]

    static let drops: [Drop] = [
        Drop(sql: "DROP VIEW v", removes: ["v"]),
        Drop(sql: "DROP VIEW IF EXISTS v", removes: ["v"]),
        Drop(sql: "DROP VIEW main.v", removes: ["v"]),
        Drop(sql: "DROP VIEW tv", removes: ["temp.tv"]),
        Drop(sql: "DROP VIEW IF EXISTS temp.tv", removes: ["temp.tv"]),
        Drop(sql: "DROP TRIGGER tr", removes: ["tr"]),
        Drop(sql: "DROP TRIGGER IF EXISTS tr", removes: ["tr"]),
        Drop(sql: "DROP TRIGGER ttr", removes: ["temp.ttr"]),
        Drop(sql: "DROP TRIGGER IF EXISTS temp.ttr", removes: ["temp.ttr"]),
        Drop(sql: "DROP INDEX i", removes: ["i"]),
        Drop(sql: "DROP INDEX IF EXISTS i", removes: ["i"]),
        Drop(sql: "DROP INDEX temp.ti", removes: ["temp.ti"]),
        Drop(sql: "DROP TABLE f", removes: Set(fts)),
        Drop(sql: "DROP TABLE IF EXISTS f", removes: Set(fts)),
        Drop(sql: "DROP TABLE temp.tf", removes: Set(fts.map { "temp.t" + $0 })),
        Drop(sql: "DROP TABLE IF EXISTS temp.tf", removes: Set(fts.map { "temp.t" + $0 })),
        Drop(sql: "DROP TABLE gone", removes: ["gone"]),
        Drop(sql: "DROP TABLE IF EXISTS gone", removes: ["gone"]),
        Drop(sql: "DROP TABLE tt", removes: ["temp.tt", "temp.ti"]),
        Drop(sql: "DROP TABLE IF EXISTS temp.tt", removes: ["temp.tt", "temp.ti"]),
    ]

    static func open(_ kind: DatabaseKind, in directory: TemporaryDirectory) throws -> any DatabaseWriter {
        try kind.open(in: directory)
    }

    /// The schema objects seen on `db`, `temp.`-prefixed for temporary ones.
    static func objects(_ db: Database) throws -> Set<String> {
        let main = try db.fetchAll(String.self, sql: "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
        let temp = try db.fetchAll(
            String.self, sql: "SELECT name FROM sqlite_temp_master WHERE name NOT LIKE 'sqlite_%'")
        return Set(main).union(temp.map { "temp." + $0 })
    }

    @Test("a drop removes its object", arguments: DatabaseKind.queueAndPool, drops)
    func dropRemovesItsObject(kind: DatabaseKind, drop: Drop) async throws {
        try await withTemporaryDirectory { directory in
            let database = try Self.open(kind, in: directory)
            defer { database.syncClose() }
            // Temporary objects live on the writer's connection: look there.
            let before = try await database.write { db in
                try db.execute(sql: Self.schema)
                return try Self.objects(db)
            }
            #expect(drop.removes.isSubset(of: before))
            let after = try await database.write { db in
                try db.execute(sql: drop.sql)
                return try Self.objects(db)
            }
            #expect(after == before.subtracting(drop.removes))
            // And the name can be used again at once.
            if drop.sql.hasPrefix("DROP VIEW") {
                let name = drop.removes.first!
                let recreate = name.hasPrefix("temp.") ? "CREATE TEMP VIEW tv AS SELECT 2" : "CREATE VIEW v AS SELECT 2"
                try await database.write { db in try db.execute(sql: recreate) }
                let sql = name.hasPrefix("temp.") ? "SELECT * FROM temp.tv" : "SELECT * FROM v"
                #expect(try await database.write { db in try db.fetchOne(Int.self, sql: sql) } == 2)
            }
        }
    }

    /// `DROP VIEW v; CREATE VIEW v AS …` in one script, with an observation
    /// running (so the change hooks are installed): the new view is there and
    /// the observation follows it.
    @Test(arguments: DatabaseKind.queueAndPool)
    func viewRedefinedInOneScript(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try Self.open(kind, in: directory)
            defer { database.syncClose() }
            try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE t (a); INSERT INTO t VALUES (1), (2);
                        CREATE VIEW v AS SELECT a FROM t;
                        """)
            }
            let (values, task) = record(database.observe(IntRequest("SELECT count(*) FROM v")))
            defer { task.cancel() }
            try await values.wait { $0.last?.value == 2 }
            try await database.write { db in
                try db.execute(sql: "DROP VIEW v; CREATE VIEW v AS SELECT a FROM t WHERE a > 1")
            }
            try await values.wait { $0.last?.value == 1 }
            let sql = try await database.read { db in
                try db.fetchOne(String.self, sql: "SELECT sql FROM sqlite_master WHERE name = 'v'")
            }
            #expect(sql == "CREATE VIEW v AS SELECT a FROM t WHERE a > 1")
        }
    }

    /// A cached `DROP VIEW IF EXISTS` that found nothing, run again after
    /// another connection created the view: SQLite re-prepares it on its
    /// own, outside the library's prepare, and the drop still happens.
    @Test(arguments: DatabaseKind.queueAndPool)
    func dropReplayedAfterAnotherConnectionsSchemaChange(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let database: any DatabaseWriter =
                kind == .pool ? try DatabasePool(path: path) : try DatabaseQueue(path: path)
            defer { database.syncClose() }
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE t (a)")
                try db.execute(sql: "DROP VIEW IF EXISTS v")
            }
            let other = try DatabaseQueue(path: path)
            try await other.write { db in try db.execute(sql: "CREATE VIEW v AS SELECT a FROM t") }
            await other.close()
            let views = try await database.write { db in
                try db.execute(sql: "DROP VIEW IF EXISTS v")
                return try db.fetchAll(String.self, sql: "SELECT name FROM sqlite_master WHERE type = 'view'")
            }
            #expect(views == [])
        }
    }

    /// Each form of `ALTER TABLE` changes the schema as it says.
    @Test(arguments: DatabaseKind.queueAndPool)
    func alterTableFormsTakeEffect(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try Self.open(kind, in: directory)
            defer { database.syncClose() }
            let columns = try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE t (id INTEGER PRIMARY KEY, a, b, c);
                        INSERT INTO t VALUES (1, 'x', 'y', 'z');
                        CREATE TEMP TABLE tt (x);
                        ALTER TABLE t RENAME TO u;
                        ALTER TABLE u RENAME COLUMN a TO a2;
                        ALTER TABLE u ADD COLUMN d DEFAULT 4;
                        ALTER TABLE u DROP COLUMN b;
                        ALTER TABLE temp.tt RENAME TO tt2;
                        ALTER TABLE tt2 ADD COLUMN y;
                        """)
                return try db.fetchAll(String.self, sql: "SELECT name FROM pragma_table_info('u')")
                    + db.fetchAll(String.self, sql: "SELECT name FROM temp.pragma_table_info('tt2')")
            }
            #expect(columns == ["id", "a2", "c", "d", "x", "y"])
            let names = try await database.read { db in
                try db.fetchAll(String.self, sql: "SELECT name FROM sqlite_master ORDER BY name")
            }
            #expect(names == ["u"])
            let row = try await database.read { db in try db.fetchOne(sql: "SELECT * FROM u") }
            #expect(row?.values == [.integer(1), .text("x"), .text("z"), .integer(4)])
        }
    }

    /// Statements that run SQL of SQLite's own under the same authorizer
    /// (`ANALYZE` deletes and rewrites `sqlite_stat1`, `VACUUM` copies every
    /// table) keep every object and row.
    @Test(arguments: DatabaseKind.queueAndPool)
    func maintenanceStatementsKeepEverything(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try Self.open(kind, in: directory)
            defer { database.syncClose() }
            let before = try await database.write { db in
                try db.execute(sql: Self.schema)
                try db.execute(sql: "INSERT INTO t (a) VALUES (1), (2), (3); INSERT INTO f VALUES ('hello')")
                return try Self.objects(db)
            }
            let (after, counts) = try await database.writeWithoutTransaction { db in
                for sql in ["ANALYZE", "ANALYZE", "REINDEX", "VACUUM", "ANALYZE t", "REINDEX i"] {
                    try db.execute(sql: sql)
                }
                let counts = try db.fetchAll(
                    Int.self,
                    sql: """
                        SELECT count(*) FROM t UNION ALL SELECT count(*) FROM f WHERE f MATCH 'hello'
                        UNION ALL SELECT count(*) FROM sqlite_stat1 WHERE tbl = 't'
                        """)
                return (try Self.objects(db), counts)
            }
            #expect(after == before)
            #expect(counts == [3, 1, 1])
        }
    }

    /// The drops leave the truncate trap covered: a `DELETE` without `WHERE`
    /// prepared right after a drop in the same script, cached while nothing
    /// observed, is still seen row by row once an observation starts.
    @Test(arguments: DatabaseKind.queueAndPool)
    func deleteWithoutWhereAfterADropIsStillSeen(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try Self.open(kind, in: directory)
            defer { database.syncClose() }
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE t (a); CREATE VIEW v AS SELECT a FROM t; CREATE TABLE d (x)")
                try db.execute(sql: "DROP VIEW v")
                try db.execute(sql: "DROP TABLE d")
                try db.execute(sql: "DELETE FROM t")
                try db.execute(sql: "INSERT INTO t VALUES (1), (2)")
            }
            let (values, task) = record(database.observe(IntRequest("SELECT count(*) FROM t")))
            defer { task.cancel() }
            try await values.wait { $0.last?.value == 2 }
            try await database.write { db in try db.execute(sql: "DELETE FROM t") }
            try await values.wait { $0.last?.value == 0 }
        }
    }
}
