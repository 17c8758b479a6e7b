@testable import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// Under the thread sanitizer, megabyte-sized calls are a thousand times
// slower (a guarded `printf` of 1 MB took 27 s): those tests are skipped.

/// What one statement of untrusted SQL may cost: each step is bounded, so
/// that the time limit and cancellation hold, and so is its result's size.
@Suite("Untrusted SQL cost")
struct UntrustedSQLCostTests {
    /// Opens a queue or a pool on a file of `directory`, with a table `t` of 10 rows.
    func open(_ kind: DatabaseKind, in directory: TemporaryDirectory) async throws -> any DatabaseWriter {
        let path = directory.file("db.sqlite")
        let database = try kind.open(at: path)
        try await database.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE t (x INTEGER PRIMARY KEY, name TEXT);
                    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10)
                    INSERT INTO t SELECT x, 'name' || x FROM c;
                    """)
        }
        return database
    }

    /// Runs `sql` under `policy` in a read; returns the error (nil when it
    /// ran) and how long it took.
    func run(_ sql: String, on database: any DatabaseWriter, policy: UntrustedSQLPolicy = UntrustedSQLPolicy())
        async throws -> (error: SQLiteError?, duration: Duration)
    {
        try await withTimeout {
            try await database.read { db in
                let start = ContinuousClock.now
                do {
                    _ = try db.withUntrustedSQL(policy) { try db.fetchAll(sql: sql) }
                    return (nil, ContinuousClock.now - start)
                } catch let error as SQLiteError {
                    return (error, ContinuousClock.now - start)
                }
            }
        }
    }

    /// Calls whose one step took from seconds to hours (the product of two
    /// sizes, or a width) are refused at once under the default policy.
    @Test(.disabled(if: isThreadSanitized, "megabyte-sized calls"), arguments: DatabaseKind.onFile)
    func costlySingleCallsAreRefusedAtOnce(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await open(kind, in: directory)
            defer { database.syncClose() }
            for sql in [
                "SELECT instr(printf('%.*c', 999999, 'a'), printf('%.*c', 499999, 'a') || 'b')",
                "SELECT replace(printf('%.*c', 999999, 'a'), printf('%.*c', 499999, 'a') || 'b', 'x')",
                "SELECT trim(printf('%.*c', 999999, 'a'), printf('%.*c', 499999, 'b') || 'a')",
                "SELECT ltrim(printf('%.*c', 999999, 'a'), printf('%.*c', 499999, 'b') || 'a')",
                "SELECT rtrim(printf('%.*c', 999999, 'a'), printf('%.*c', 499999, 'b') || 'a')",
                "SELECT printf('%.*c', 2000000000, 'a')", "SELECT format('%.2000000000c', 'a')",
                "SELECT printf('%2000000000c', 'a')",
                "SELECT instr(printf('%.*c', 2000000, 'a'), printf('%.*c', 1000000, 'a') || 'b')",
                "SELECT printf('%.*c', 999999, 'a') LIKE '%' || printf('%.*c', 40000, 'a') || 'b%'",
                "SELECT printf('%.*c', 999999, 'a') GLOB '*' || printf('%.*c', 40000, 'a') || 'b*'",
                "SELECT zeroblob(1000001)", "SELECT randomblob(1000001)",
            ] {
                let (error, duration) = try await run(sql, on: database)
                #expect(error != nil, "\(sql)")
                // Refused before the call runs; it took from 10 s to hours. Loose for slow machines.
                #expect(duration < .seconds(5), "\(sql): \(duration)")
            }
        }
    }

    /// FTS5's `highlight()` and `snippet()` build their output piece by
    /// piece, copying all of it at each piece: on one row of 100,000 tokens
    /// (a 300 kB document) one call runs for seconds to minutes, out of
    /// reach of the time limit. Under the policy they are refused before
    /// they run; trusted SQL still has them.
    @Test(arguments: DatabaseKind.onFile)
    func fts5MarkupFunctionsAreRefused(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await open(kind, in: directory)
            defer { database.syncClose() }
            try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE VIRTUAL TABLE f USING fts5(x);
                        INSERT INTO f VALUES ('a b c');
                        """)
            }
            let policy = UntrustedSQLPolicy(timeLimit: .seconds(60))
            for sql in [
                "SELECT highlight(f, 0, '[', ']') FROM f WHERE f MATCH 'a'",
                "SELECT snippet(f, 0, '[', ']', '…', 64) FROM f WHERE f MATCH 'a'",
            ] {
                let (error, _) = try await run(sql, on: database, policy: policy)
                #expect(error?.code == .auth, "\(sql): \(String(describing: error))")
                #expect(error?.message?.contains("refused") == true, "\(sql): \(String(describing: error))")
                let trusted = try await database.read { db in try db.fetchOne(String.self, sql: sql) }
                #expect(trusted?.contains("[a]") == true, "\(sql): \(String(describing: trusted))")
            }
            // The rest of FTS5 stays allowed.
            let (error, _) = try await run(
                "SELECT rowid, bm25(f) FROM f WHERE f MATCH 'a' ORDER BY rank", on: database, policy: policy)
            #expect(error == nil, "\(String(describing: error))")
        }
    }

    /// The worst calls that the bounds let through end within a fraction
    /// of a second each, and the guarded functions still work on sizes
    /// within their bounds.
    @Test(.disabled(if: isThreadSanitized, "megabyte-sized calls"), arguments: DatabaseKind.onFile)
    func callsWithinTheBoundsAreQuick(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await open(kind, in: directory)
            defer { database.syncClose() }
            for sql in [
                "SELECT instr(printf('%.*c', 999999, 'a'), 'aaaaaab')",
                "SELECT instr(printf('%.*c', 6000, 'a'), printf('%.*c', 1600, 'a') || 'b')",
                "SELECT trim(printf('%.*c', 999999, 'a'), 'bcdefghia')",
                "SELECT printf('%.*c', 999999, 'a') LIKE '%' || printf('%.*c', 97, 'a') || 'b%'",
                "SELECT printf('%.*c', 999999, 'a') GLOB '*' || printf('%.*c', 97, 'a') || 'b*'",
                "SELECT length(randomblob(1000000))", "SELECT length(printf('%.*c', 999999, 'a'))",
            ] {
                let (error, duration) = try await run(sql, on: database)
                #expect(error == nil, "\(sql): \(String(describing: error))")
                // About 0.25 s at most here; loose for slow machines (the thread sanitizer).
                #expect(duration < .seconds(10), "\(sql): \(duration)")
            }
        }
    }

    /// The guards return what the built-ins return: types, blobs, `NULL`,
    /// text that is not ASCII, and outside a policy sizes of any product.
    @Test func guardedFunctionsAnswerAsTheBuiltIns() async throws {
        let expressions = [
            "instr('abcabc', 'ca')", "instr(x'00ff01', x'ff')", "instr(NULL, 'a')", "instr('é✓x', 'x')",
            "instr(12345, 34)", "instr('abc', '')", "replace('aXbXc', 'X', '--')", "replace(x'0102', x'01', 'z')",
            "replace('abc', '', 'x')", "replace(NULL, 'a', 'b')", "trim('xxhixx', 'x')", "ltrim('  hi ', ' ')",
            "rtrim('hé✓✓', '✓')", "trim(123, 1)", "printf('%d-%s-%5.2f', 7, 'x', 3.14159)", "printf()",
            "format('%q', 'it''s')", "printf('%*d', 5, 42)", "printf('%.3s', 'abcdef')", "typeof(instr(x'01', x'01'))",
        ]
        let sql = "SELECT " + expressions.joined(separator: ", ")
        let builtIns = try DatabaseQueue()
        let expected = try await builtIns.read { db in try db.fetchAll(sql: sql) }
        let queue = try DatabaseQueue()
        let (guarded, afterwards, large) = try await queue.read { db in
            let guarded = try db.withUntrustedSQL { try db.fetchAll(sql: sql) }
            // Outside the policy the guards stay installed and let everything through.
            let large = try db.fetchOne(
                Int.self, sql: "SELECT instr(printf('%.*c', 20000, 'a'), printf('%.*c', 10000, 'a') || 'b')")
            return (guarded, try db.fetchAll(sql: sql), large)
        }
        #expect(guarded == expected)
        #expect(afterwards == expected)
        #expect(large == 0)
    }

    /// An index on an expression that uses a guarded function keeps
    /// working (the guards are deterministic), before and after a policy.
    @Test func indexesOnGuardedFunctionsKeepWorking() async throws {
        let queue = try DatabaseQueue()
        let count = try await queue.write { db -> Int in
            try db.execute(sql: "CREATE TABLE w (v TEXT); CREATE INDEX w_on_dot ON w (instr(v, '.'))")
            _ = try db.withUntrustedSQL { try db.fetchAll(sql: "SELECT instr(v, '.') FROM w") }
            try db.execute(sql: "INSERT INTO w VALUES ('a.b'), ('ab')")
            return try db.fetchOne(Int.self, sql: "SELECT count(*) FROM w WHERE instr(v, '.') = 2") ?? -1
        }
        #expect(count == 1)
    }

    /// A runaway query whose every step is as costly as the bounds allow
    /// still stops at its time limit.
    @Test(arguments: DatabaseKind.onFile)
    func timeLimitHoldsForCostlySteps(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await open(kind, in: directory)
            defer { database.syncClose() }
            let (error, duration) = try await run(
                """
                WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
                SELECT count(*) FROM c
                WHERE length(randomblob(999999)) + length(hex(zeroblob(499999))) > 0
                """, on: database, policy: UntrustedSQLPolicy(timeLimit: .milliseconds(300)))
            #expect(error?.code == .interrupt)
            #expect(duration >= .milliseconds(300))
            #expect(duration < .seconds(10), "\(duration)")
        }
    }

    /// Cancelling the task of a read that runs such a query under a long
    /// time limit ends it promptly.
    @Test(arguments: DatabaseKind.onFile)
    func cancellationEndsCostlyStepsPromptly(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await open(kind, in: directory)
            defer { database.syncClose() }
            let started = Gate()
            let read = Task {
                try await database.read { db in
                    try db.withUntrustedSQL(UntrustedSQLPolicy(timeLimit: .seconds(600))) {
                        started.open()
                        return try db.fetchAll(
                            sql: """
                                WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
                                SELECT count(*) FROM c WHERE length(randomblob(999999)) + length(hex(zeroblob(499999))) > 0
                                """
                        ).count
                    }
                }
            }
            try await withTimeout { await started.wait() }
            try await Task.sleep(for: .milliseconds(200))
            let cancelled = ContinuousClock.now
            read.cancel()
            let result = try await withTimeout { await read.result }
            // Long before the 600 s time limit, which would end it too; a
            // loaded machine only makes it later.
            #expect(ContinuousClock.now - cancelled < .seconds(300))
            #expect(throws: CancellationError.self) { try result.get() }
        }
    }

    /// `SELECT x, zeroblob(99000000) FROM (10 rows)`: each value within a
    /// 100 MB value limit, the result stopped at the 100 MB result limit,
    /// quickly and before most of it is made.
    @Test(arguments: DatabaseKind.onFile)
    func resultsBeyondTheMaximumSizeAreRefused(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await open(kind, in: directory)
            defer { database.syncClose() }
            var policy = UntrustedSQLPolicy()
            policy.maximumValueLength = 100_000_000
            let (error, duration) = try await run("SELECT x, zeroblob(99000000) FROM t", on: database, policy: policy)
            #expect(error?.code == .tooBig)
            #expect(error?.message?.contains("the result is larger than the limit of 100000000 bytes") == true)
            // Two values of 99 MB made, not ten (it took 83 s and 4.5 GB in the CLI); loose for slow machines.
            #expect(duration < .seconds(30), "\(duration)")
            // Under the default value limit, the first value is refused.
            let (valueError, _) = try await run("SELECT x, zeroblob(99000000) FROM t", on: database)
            #expect(valueError?.code == .tooBig)
            // A smaller result limit counts every value of every row (8
            // bytes each, plus the bytes of text); nil lifts it.
            policy.maximumResultSize = 10 * 8 + 10 * 8 + 9 * 5 + 6
            #expect(try await run("SELECT x, name FROM t", on: database, policy: policy).error == nil)
            policy.maximumResultSize = 10 * 8 + 10 * 8 + 9 * 5 + 6 - 1
            #expect(try await run("SELECT x, name FROM t", on: database, policy: policy).error?.code == .tooBig)
            // NULLs and empty texts take memory and output too: 100 of
            // them in each of 10 rows, 600 MB in 5 s when they counted 0.
            let hundred = Array(repeating: "NULL, ''", count: 50).joined(separator: ", ")
            policy.maximumResultSize = 10 * 100 * 8 - 1
            let (emptyError, _) = try await run("SELECT \(hundred) FROM t", on: database, policy: policy)
            #expect(emptyError?.code == .tooBig)
            policy.maximumResultSize = nil
            let (unlimited, _) = try await run("SELECT x, zeroblob(1000) FROM t", on: database, policy: policy)
            #expect(unlimited == nil)
        }
    }

    /// Rows whose sort needs about 10 MB of temporary files (SQLite's
    /// sorter spills beyond its 2 MB page cache, whatever `temp_store` says).
    static let largeSort = """
        WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
        SELECT x FROM c ORDER BY randomblob(500)
        """

    /// A large `ORDER BY` wrote 1.6 GB of temporary files within the
    /// default 5 s: now its files stop at the maximum temporary storage,
    /// the statement throws `.tooBig`, and they are gone when it ends.
    @Test(arguments: DatabaseKind.onFile)
    func temporaryFilesBeyondTheMaximumAreRefused(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await open(kind, in: directory)
            defer { database.syncClose() }
            // A generous time limit: the sort takes about 0.3 s, but far longer on a loaded machine.
            var policy = UntrustedSQLPolicy(timeLimit: .seconds(60))
            policy.maximumTemporaryStorage = 2_000_000
            let (error, _) = try await run(Self.largeSort, on: database, policy: policy)
            #expect(error?.code == .tooBig)
            let expected =
                "the query's temporary files are larger than the limit of 2000000 bytes (maximum temporary storage)"
            #expect(error?.message?.contains(expected) == true, "\(String(describing: error))")
            try await database.read { db in
                #expect(db.temporaryStorageInUse == 0)
                // The connection goes on, under the policy and without it.
                let unlimited = UntrustedSQLPolicy(timeLimit: .seconds(60), maximumTemporaryStorage: nil)
                let rows = try db.withUntrustedSQL(unlimited) { try db.fetchAll(sql: Self.largeSort) }
                #expect(rows.count == 20000)
                #expect(try db.fetchAll(sql: Self.largeSort).count == 20000)
                #expect(db.temporaryStorageInUse == 0)
            }
            // The default limit (256 MB) lets this sort run.
            let defaultLimit = UntrustedSQLPolicy(timeLimit: .seconds(60))
            #expect(try await run(Self.largeSort, on: database, policy: defaultLimit).error == nil)
        }
    }

    /// The other tables SQLite spills to temporary files past its page
    /// cache count too: `DISTINCT`, `UNION` and a materialized view.
    @Test(arguments: DatabaseKind.onFile)
    func temporaryTablesBeyondTheMaximumAreRefused(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await open(kind, in: directory)
            defer { database.syncClose() }
            var policy = UntrustedSQLPolicy(timeLimit: .seconds(60))
            policy.maximumTemporaryStorage = 2_000_000
            let rows = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) "
            for sql in [
                rows + "SELECT count(*) FROM (SELECT DISTINCT randomblob(500) FROM c)",
                rows + "SELECT count(*) FROM (SELECT randomblob(500) FROM c UNION SELECT randomblob(500) FROM c)",
                rows + ", m AS MATERIALIZED (SELECT x, randomblob(500) FROM c) SELECT count(*) FROM m",
            ] {
                let (error, _) = try await run(sql, on: database, policy: policy)
                #expect(error?.code == .tooBig, "\(sql): \(String(describing: error))")
                #expect(error?.message?.contains("temporary files are larger than the limit") == true)
            }
            try await database.read { db in #expect(db.temporaryStorageInUse == 0) }
        }
    }

    /// The files of a sort are counted while they are open, under the
    /// policy only: trusted SQL is never charged, not even on a connection
    /// that ran untrusted SQL before, and never refused.
    @Test(arguments: DatabaseKind.onFile)
    func onlyUntrustedSQLIsChargedForTemporaryFiles(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await open(kind, in: directory)
            defer { database.syncClose() }
            try await database.read { db in
                var policy = UntrustedSQLPolicy(timeLimit: .seconds(60))
                policy.maximumTemporaryStorage = 2_000_000
                let untrusted = try db.withUntrustedSQL(policy) { try db.fetchAll(sql: "SELECT 1") }
                #expect(untrusted.count == 1)
                // Trusted, in the middle of the sort: its files hold about 10 MB, charged to nobody.
                let cursor = try db.fetchCursor(sql: Self.largeSort)
                #expect(try cursor.next() != nil)
                #expect(db.temporaryStorageInUse == 0)
                while try cursor.next() != nil {}
                // Untrusted, without a limit: counted while open, released at the end.
                policy.maximumTemporaryStorage = nil
                let inUse = try db.withUntrustedSQL(policy) {
                    let cursor = try db.fetchCursor(sql: Self.largeSort)
                    _ = try cursor.next()
                    let inUse = db.temporaryStorageInUse
                    while try cursor.next() != nil {}
                    return inUse
                }
                #expect(inUse > 2_000_000, "\(inUse)")
                #expect(db.temporaryStorageInUse == 0)
            }
        }
    }

    /// An observed fetch runs DBWatch's own queries (of the schema, for
    /// its region) while the user's statement runs: neither their rows nor
    /// their start count in the user statement's result size and time.
    @Test(arguments: DatabaseKind.onFile)
    func ownQueriesDoNotCountInTheResultSize(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await open(kind, in: directory)
            defer { database.syncClose() }
            try await database.write { db in try db.execute(sql: "CREATE VIEW v AS SELECT x FROM t WHERE x = 1") }
            let request = PolicyRequest(sql: "SELECT x FROM v", maximumResultSize: 8)
            let observation = database.observe(request)
            let first = try await withTimeout {
                for try await value in observation { return value }
                return -1
            }
            #expect(first == 1)
        }
    }
}

/// One integer fetched under a policy with a maximum result size.
private struct PolicyRequest: Queryable {
    static let defaultValue = 0
    let sql: String
    let maximumResultSize: Int

    func fetch(_ db: Database) throws -> Int {
        try db.withUntrustedSQL(UntrustedSQLPolicy(maximumResultSize: maximumResultSize)) {
            try db.fetchOne(Int.self, sql: sql) ?? 0
        }
    }
}
