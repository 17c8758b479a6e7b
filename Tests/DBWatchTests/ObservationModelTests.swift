import DBWatch
import DBWatchTestSupport
import Testing

/// A randomized model-based test with a fixed seed: random write scripts
/// against several observations; after each step every observation
/// converges to a fresh fetch, and none is notified for writes outside its
/// region.
@Suite("Observation model")
struct ObservationModelTests {
    /// One statement of a step, with what it writes: table -> columns ("*" = all).
    struct Write {
        var sql: String
        var writes: [String: Set<String>]
    }

    /// An observed query and the region it reads: table -> columns ("*" = all).
    struct Observed {
        var request: SQLRequest
        var reads: [String: Set<String>]
    }

    static let schema = """
        CREATE TABLE a (id INTEGER PRIMARY KEY, x INTEGER, y INTEGER);
        CREATE TABLE b (k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID;
        CREATE TABLE c (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
        INSERT INTO c VALUES (1, 0);
        CREATE TRIGGER b_counts AFTER INSERT ON b BEGIN UPDATE c SET n = n + 1 WHERE id = 1; END;
        """

    static let observed: [Observed] = [
        Observed(request: SQLRequest("SELECT id, x FROM a ORDER BY id"), reads: ["a": ["id", "x"]]),
        Observed(request: SQLRequest("SELECT count(*) FROM b"), reads: ["b": ["*"]]),
        Observed(request: SQLRequest("SELECT sum(n) FROM c"), reads: ["c": ["n"]]),
        Observed(request: SQLRequest("SELECT y FROM a WHERE id = 3"), reads: ["a": ["id", "y"]]),
        Observed(
            request: SQLRequest("SELECT a.id, b.v FROM a JOIN b ON b.k = 'k' || a.id ORDER BY a.id"),
            reads: ["a": ["id"], "b": ["k", "v"]]),
    ]

    static func randomWrite(_ rng: inout SeededGenerator) -> Write {
        let id = Int.random(in: 1...8, using: &rng)
        let value = Int.random(in: 0...5, using: &rng)
        switch Int.random(in: 0..<14, using: &rng) {
        case 0: return Write(sql: "INSERT INTO a (id, x, y) VALUES (\(id), \(value), \(value))", writes: ["a": ["*"]])
        case 1: return Write(sql: "UPDATE a SET x = \(value) WHERE id = \(id)", writes: ["a": ["x"]])
        case 2: return Write(sql: "UPDATE a SET y = \(value) WHERE id = \(id)", writes: ["a": ["y"]])
        case 3: return Write(sql: "DELETE FROM a WHERE id = \(id)", writes: ["a": ["*"]])
        case 4:
            return Write(sql: "INSERT OR REPLACE INTO a (id, x, y) VALUES (\(id), \(value), 0)", writes: ["a": ["*"]])
        case 5:
            return Write(
                sql:
                    "INSERT INTO a (id, x, y) VALUES (\(id), \(value), 1) ON CONFLICT (id) DO UPDATE SET x = excluded.x",
                writes: ["a": ["*"]])
        case 6: return Write(sql: "DELETE FROM a", writes: ["a": ["*"]])
        case 7: return Write(sql: "INSERT INTO b (k, v) VALUES ('k\(id)', \(value))", writes: ["b": ["*"], "c": ["n"]])
        case 8: return Write(sql: "UPDATE b SET v = \(value) WHERE k = 'k\(id)'", writes: ["b": ["v"]])
        case 9: return Write(sql: "DELETE FROM b WHERE k = 'k\(id)'", writes: ["b": ["*"]])
        case 10:
            return Write(sql: "REPLACE INTO b (k, v) VALUES ('k\(id)', \(value))", writes: ["b": ["*"], "c": ["n"]])
        case 11: return Write(sql: "DELETE FROM b", writes: ["b": ["*"]])
        case 12: return Write(sql: "INSERT INTO c (id, n) VALUES (\(id + 1), \(value))", writes: ["c": ["*"]])
        default: return Write(sql: "UPDATE c SET n = n + \(value) WHERE id = 1", writes: ["c": ["n"]])
        }
    }

    static func touches(_ writes: [String: Set<String>], _ reads: [String: Set<String>]) -> Bool {
        for (table, written) in writes {
            guard let read = reads[table] else { continue }
            if written.contains("*") || read.contains("*") || !written.isDisjoint(with: read) { return true }
        }
        return false
    }

    struct Boom: Error {}

    func run(on database: any DatabaseWriter, seed: UInt64, steps: Int) async throws {
        try await database.write { db in try db.execute(sql: Self.schema) }
        var rng = SeededGenerator(seed: seed)
        var recorders: [ValueRecorder<Result<[Row], any Error>>] = []
        var tasks: [Task<Void, Never>] = []
        for observed in Self.observed {
            let (recorder, task) = record(database.observe(observed.request))
            recorders.append(recorder)
            tasks.append(task)
        }
        defer { for task in tasks { task.cancel() } }
        for recorder in recorders { try await recorder.wait(forCount: 1) }

        for step in 0..<steps {
            // A step: 1 to 4 statements in one transaction, maybe a rolled-back
            // savepoint, maybe a failing statement that rolls everything back.
            let count = Int.random(in: 1...4, using: &rng)
            var statements = (0..<count).map { _ in Self.randomWrite(&rng) }
            let savepoint = Bool.random(using: &rng) && count > 1 ? Int.random(in: 0..<count, using: &rng) : nil
            let fails = Int.random(in: 0..<10, using: &rng) == 0
            if fails { statements.append(Write(sql: "INSERT INTO c (id, n) VALUES (1, 0)", writes: ["c": ["*"]])) }
            var writes: [String: Set<String>] = [:]
            for statement in statements {
                for (table, columns) in statement.writes { writes[table, default: []].formUnion(columns) }
            }
            let notifiedBefore = Self.observed.map { database.statistics(for: $0.request)?.changesNotified ?? 0 }
            let sqls = statements.map(\.sql)
            var committed = true
            do {
                try await database.write { db in
                    for (index, sql) in sqls.enumerated() {
                        if index == savepoint {
                            try? db.inSavepoint {
                                try db.execute(sql: sql)
                                throw Boom()
                            }
                        } else {
                            // Constraint errors from random data are part of the game.
                            do { try db.execute(sql: sql) } catch ResultCode.constraint
                                where !(fails && index == sqls.count - 1)
                            {}
                        }
                    }
                }
            } catch {
                committed = false
                #expect(fails, "step \(step): unexpected \(error)")
            }
            for (index, observed) in Self.observed.enumerated() {
                let notified = database.statistics(for: observed.request)?.changesNotified ?? 0
                if !committed || !Self.touches(writes, observed.reads) {
                    #expect(
                        notified == notifiedBefore[index],
                        "step \(step): \(observed.request.sql) notified for \(sqls) (committed: \(committed)) region \(database.statistics(for: observed.request)?.region.description ?? "")"
                    )
                }
                let expected = try await database.read { db in try observed.request.fetch(db) }
                try await recorders[index].wait { $0.last?.value == expected }
            }
        }
    }

    @Test func randomScriptsOnQueue() async throws {
        try await run(on: DatabaseQueue(), seed: 0x5EED, steps: 150)
    }

    @Test func randomScriptsOnPool() async throws {
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            try await run(on: pool, seed: 0xD8A7C4, steps: 150)
            await pool.close()
        }
    }
}
