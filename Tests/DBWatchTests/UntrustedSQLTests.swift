@testable import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

@Suite("Untrusted SQL")
struct UntrustedSQLTests {
    /// Runs `sql` under the policy (with `timeLimit`) on a read-write queue
    /// over a file, and returns the refusal (nil when it ran).
    func refusal(
        _ sql: String, in directory: TemporaryDirectory, execute: Bool = false,
        timeLimit: Duration = .milliseconds(300)
    ) async throws -> SQLiteError? {
        try await timedRefusal(sql, in: directory, execute: execute, timeLimit: timeLimit).error
    }

    /// Like ``refusal(_:in:)``, and also how long the untrusted statement ran
    /// (setting up the file is not counted: a loaded machine can make it slow).
    func timedRefusal(
        _ sql: String, in directory: TemporaryDirectory, execute: Bool = false,
        timeLimit: Duration = .milliseconds(300)
    ) async throws -> (error: SQLiteError?, duration: Duration) {
        let queue = try DatabaseQueue(path: directory.file("db.sqlite"))
        defer { queue.syncClose() }
        try await queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS t (a); DELETE FROM t; INSERT INTO t VALUES (1);
                    CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(text);
                    """)
        }
        return try await queue.writeWithoutTransaction { db in
            let start = ContinuousClock.now
            do {
                _ = try db.withUntrustedSQL(UntrustedSQLPolicy(timeLimit: timeLimit)) {
                    if execute { try db.execute(sql: sql) } else { _ = try db.fetchAll(sql: sql) }
                }
                return (nil, ContinuousClock.now - start)
            } catch let error as SQLiteError {
                return (error, ContinuousClock.now - start)
            }
        }
    }

    @Test func readsAreAllowed() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            for sql in [
                "SELECT * FROM t", "WITH x AS (SELECT 1) SELECT * FROM x", "VALUES (1), (2)", "PRAGMA table_info(t)",
                "EXPLAIN SELECT * FROM t", "  -- comment\n SELECT count(*) FROM t", "PRAGMA user_version",
                "SELECT name FROM sqlite_master",
                // Virtual tables, used first on a fresh connection each.
                "SELECT value FROM json_each('[1,2]')", "SELECT * FROM pragma_table_info('t')",
                "SELECT count(*) FROM search", "SELECT * FROM search WHERE search MATCH 'x'",
            ] {
                // Allowed, not timed: a generous limit, for a loaded machine under a sanitizer.
                let error = try await refusal(sql, in: directory, timeLimit: .seconds(30))
                #expect(error == nil, "\(sql)")
            }
        }
    }

    /// The read form of each pragma the policy lists as read-only runs, on
    /// a read-write connection and on a pool's read-only one: `PRAGMA
    /// journal_mode` included, which SQLite does not mark as read-only.
    @Test(arguments: UntrustedSQLPolicy.readOnlyPragmas.sorted())
    func readOnlyPragmasReadTheirValue(pragma: String) async throws {
        // The argument of those that name what to read.
        let arguments = [
            "foreign_key_check": "t", "foreign_key_list": "t", "index_info": "i", "index_list": "t",
            "index_xinfo": "i", "table_info": "t", "table_xinfo": "t",
        ]
        var forms = ["PRAGMA \(pragma)", "PRAGMA main.\(pragma)"]
        if let argument = arguments[pragma] { forms = forms.map { "\($0)(\(argument))" } }
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            defer { pool.syncClose() }
            try await pool.write { db in try db.execute(sql: "CREATE TABLE t (a); CREATE INDEX i ON t (a)") }
            for sql in forms {
                let written = try await pool.writeWithoutTransaction { db in
                    try db.withUntrustedSQL { try db.fetchAll(sql: sql) }
                }
                let read = try await pool.read { db in try db.withUntrustedSQL { try db.fetchAll(sql: sql) } }
                if pragma == "journal_mode" {
                    #expect(written.map(\.values) == [[.text("wal")]])
                    #expect(read.map(\.values) == [[.text("wal")]])
                }
            }
        }
    }

    /// The setting forms stay refused whatever their spelling, and change nothing.
    @Test(arguments: [
        "PRAGMA journal_mode = WAL", "PRAGMA main.journal_mode=delete", "PRAGMA journal_mode(wal)",
        "PRAGMA temp.journal_mode = memory", "PRAGMA journal_mode = OFF", "PRAGMA user_version = 3",
        "PRAGMA main.user_version(3)", "PRAGMA application_id = 7", "PRAGMA schema_version = 99",
        "PRAGMA foreign_keys = ON", "PRAGMA page_size = 8192", "PRAGMA encoding = 'UTF-16'",
    ])
    func settingFormsOfReadOnlyPragmasAreRefused(sql: String) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            for execute in [false, true] {
                let error = try await refusal(sql, in: directory, execute: execute)
                #expect(error?.code == .auth, "\(String(describing: error))")
                #expect(error?.message?.hasPrefix("refused: changing PRAGMA ") == true, "\(String(describing: error))")
            }
            let queue = try DatabaseQueue(path: directory.file("db.sqlite"))
            defer { queue.syncClose() }
            let values = try await queue.read { db in
                try db.fetchAll(sql: "SELECT * FROM pragma_journal_mode, pragma_user_version, pragma_application_id")
            }
            #expect(values.map(\.values) == [[.text("delete"), .integer(0), .integer(0)]])
        }
    }

    @Test(arguments: [
        "INSERT INTO t VALUES (2)", "UPDATE t SET a = 3", "DELETE FROM t", "CREATE TABLE u (b)", "DROP TABLE t",
        "PRAGMA user_version = 3", "PRAGMA journal_mode = DELETE", "PRAGMA query_only = 0", "BEGIN IMMEDIATE",
        "SELECT load_extension('/tmp/x')", "SELECT fts3_tokenizer('simple')", "ANALYZE", "REINDEX",
        "SAVEPOINT s", "COMMIT", "DETACH DATABASE temp",
    ])
    func everythingElseIsRefused(sql: String) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            // Through a fetch, and through `execute(sql:)`, whose script path checks too.
            for execute in [false, true] {
                let error = try await refusal(sql, in: directory, execute: execute)
                #expect(error?.code == .auth, "\(String(describing: error))")
                #expect(error?.message?.hasPrefix("refused: ") == true)
            }
        }
    }

    @Test func emptyStatementsInAScriptAreSkipped() async throws {
        let queue = try DatabaseQueue()
        try await queue.writeWithoutTransaction { db in
            try db.withUntrustedSQL {
                try db.execute(sql: "SELECT 1;\n;SELECT 2")
                try db.execute(sql: "SELECT 1; /* c */ ; SELECT 2;;")
            }
        }
    }

    @Test func sqlAfterANULCharacterIsNotSilentlyDropped() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a)") }
        for sql in ["SELECT 1\0; DROP TABLE t", "DROP TABLE t\0"] {
            await #expect(throws: SQLiteError.self) { try await queue.write { db in try db.execute(sql: sql) } }
            await #expect(throws: SQLiteError.self) {
                try await queue.read { db in try db.fetchOne(Int.self, sql: sql) }
            }
        }
        #expect(try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") } == 0)
    }

    @Test func functionsThisSQLiteLacksFailToo() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let error = try await refusal("SELECT writefile('/tmp/x', 'y')", in: directory)
            #expect(error?.message?.contains("no such function") == true)
        }
    }

    @Test func attachAndVacuumIntoCreateNoFile() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let attached = directory.file("attached.sqlite")
            let copy = directory.file("copy.sqlite")
            let attach = try await refusal("ATTACH 'file:\(attached)?mode=rwc' AS x", in: directory)
            #expect(attach?.code == .auth)
            #expect(attach?.message == "refused: ATTACH is not allowed in a read-only query")
            let vacuum = try await refusal("VACUUM INTO '\(copy)'", in: directory)
            #expect(vacuum?.code == .auth)
            #expect(!FileManager.default.fileExists(atPath: attached))
            #expect(!FileManager.default.fileExists(atPath: copy))
        }
    }

    @Test func runawayQueryIsStopped() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            // The query never ends by itself, so any error at all proves it was
            // stopped; the duration shows it was not stopped before the limit.
            let (error, duration) = try await timedRefusal(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", in: directory)
            #expect(duration >= .milliseconds(300))
            #expect(error?.code == .interrupt)
            #expect(error?.message?.contains("time limit") == true)
        }
    }

    /// One function call that makes a huge value cannot be stopped by the
    /// time limit; the length limit refuses the value, and is lifted after.
    @Test func valuesBeyondTheMaximumLengthAreRefused() async throws {
        let queue = try DatabaseQueue()
        let (codes, fits, bounded, after, defaultLimit) = try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (v); INSERT INTO t VALUES (zeroblob(2000))")
            var policy = UntrustedSQLPolicy()
            policy.maximumValueLength = 1000
            var codes: [ResultCode?] = []
            let sqls = [
                "SELECT zeroblob(5000)", "SELECT v FROM t", "SELECT replace(printf('%.*c', 900, 'x'), 'x', 'xx')",
                // A width beyond the limit is refused before printf() spends time on it.
                "SELECT printf('%.*c', 5000, 'x')",
            ]
            for sql in sqls {
                do {
                    _ = try db.withUntrustedSQL(policy) { try db.fetchAll(sql: sql) }
                    codes.append(nil)
                } catch let error as SQLiteError {
                    codes.append(error.code)
                }
            }
            // Within the widths, SQLite's printf() gives NULL instead of a value beyond the limit.
            let (fits, bounded) = try db.withUntrustedSQL(policy) {
                (
                    try db.fetchOne(Int.self, sql: "SELECT length(printf('%.*c', 900, 'x'))"),
                    try db.fetchOne(Int?.self, sql: "SELECT printf('%.*c%.*c', 900, 'x', 900, 'x')")
                )
            }
            let after = try db.fetchOne(Int.self, sql: "SELECT length(printf('%.*c', 5000, 'x'))")
            return (codes, fits, bounded, after, UntrustedSQLPolicy().maximumValueLength)
        }
        #expect(codes == [.tooBig, .tooBig, .tooBig, .tooBig])
        #expect(fits == 900)
        #expect(bounded == .some(nil))
        #expect(after == 5000)
        #expect(defaultLimit == 1_000_000)
    }

    @Test func trustedSQLIsUnaffectedAfterwards() async throws {
        let queue = try DatabaseQueue()
        let count = try await queue.write { db -> Int in
            try db.execute(sql: "CREATE TABLE t (a)")
            _ = try? db.withUntrustedSQL { try db.execute(sql: "INSERT INTO t VALUES (1)") }
            try db.execute(sql: "INSERT INTO t VALUES (1)")
            return try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? 0
        }
        #expect(count == 1)
    }

    @Test(
        RequiredProgram.sqlite3.trait, arguments: ["cached", "not cached"])
    func aStatementRepreparedAfterASchemaChangeIsCheckedAgain(use: String) async throws {
        // Another process redefines a view: SQLite re-prepares the cached
        // untrusted statement inside its step, under the same checks.
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            var configuration = Configuration()
            configuration.maximumReaderCount = 1
            let pool = try DatabasePool(path: path, configuration: configuration)
            defer { pool.syncClose() }
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE a (x); INSERT INTO a VALUES (1); CREATE VIEW v AS SELECT x FROM a")
            }
            let sql = "SELECT * FROM v"
            let read: @Sendable (Database) throws -> [Row] = { db in
                try db.withUntrustedSQL {
                    if use == "cached" { return try db.fetchAll(sql: sql) }
                    // A script's statements are prepared afresh, but with
                    // the schema the connection knew before this read.
                    try db.execute(sql: sql + "; " + sql)
                    return []
                }
            }
            _ = try await pool.read(read)
            try await SQLiteShell.run(
                "BEGIN; DROP VIEW v; CREATE VIEW v AS SELECT fts5(NULL) AS x; COMMIT", on: path,
                busyTimeout: 5000)
            do {
                _ = try await pool.read(read)
                Issue.record("expected a refusal")
            } catch let error as SQLiteError {
                #expect(error.code == .auth)
                #expect(error.message == "refused: the function fts5() is not allowed in a read-only query")
            }
        }
    }
}
