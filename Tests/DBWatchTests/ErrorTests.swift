import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

@Suite("Errors")
struct ErrorTests {
    @Test func syntaxErrorHasMessageSQLAndOffset() async throws {
        let queue = try DatabaseQueue()
        do {
            try await queue.read { db in _ = try db.fetchAll(sql: "SELECT * FRM player") }
            Issue.record("expected an error")
        } catch let error as SQLiteError {
            #expect(error.code == .error)
            #expect(error.message?.contains("syntax error") == true)
            #expect(error.sql == "SELECT * FRM player")
            #expect(error.offset != nil)
        }
    }

    /// A statement that fails to prepare throws SQLite's message. Here the
    /// trigger's body reads rows of `t` before it fails: the lookup that
    /// gives such a table its schema ran before the error was read, and its
    /// own message ("no such table column: t.") replaced SQLite's.
    @Test func aFailedPrepareKeepsSQLitesMessage() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a); CREATE TABLE u (a)")
            try db.execute(
                sql: "CREATE TRIGGER tr AFTER INSERT ON u BEGIN SELECT count(*) FROM t; SELECT * FROM missing; END")
        }
        let error = await #expect(throws: SQLiteError.self) {
            try await queue.write { db in try db.execute(sql: "INSERT INTO u VALUES (1)") }
        }
        #expect(error?.code == .error)
        #expect(error?.message == "no such table: main.missing")
        #expect(error?.sql == "INSERT INTO u VALUES (1)")
    }

    @Test func extendedCodesMatchInCatch() async throws {
        let queue = try await makePlayerQueue()
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (id, name) VALUES (1, 'a')") }
        var matched: [String] = []
        do {
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO player (id, name) VALUES (?, ?)", arguments: [1, "secret-value"])
            }
        } catch ResultCode.constraintPrimaryKey {
            matched.append("primaryKey")
        } catch {
            Issue.record("unexpected \(error)")
        }
        do {
            try await queue.write { db in try db.execute(sql: "INSERT INTO player (id, name) VALUES (2, NULL)") }
        } catch ResultCode.constraintUnique {
            Issue.record("an extended code must not match another extended code")
        } catch ResultCode.constraint {
            matched.append("constraint")
        }
        #expect(matched == ["primaryKey", "constraint"])
    }

    @Test func descriptionNeverShowsBoundValues() async throws {
        let queue = try await makePlayerQueue()
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (id, name) VALUES (1, 'a')") }
        do {
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO player (id, name) VALUES (?, ?)", arguments: [1, "secret-value"])
            }
        } catch let error as SQLiteError {
            #expect(error.code == .constraintPrimaryKey)
            #expect(error.primaryCode == .constraint)
            #expect(!error.description.contains("secret-value"))
            #expect(error.description.contains("INSERT INTO player"))
        }
    }

    @Test func missingFileReadOnlyCreatesNothing() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var configuration = Configuration()
        configuration.readOnly = true
        let path = directory.file("missing.sqlite")
        #expect(throws: SQLiteError.self) { try DatabaseQueue(path: path, configuration: configuration) }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func notADatabaseIsAClearError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("text.sqlite")
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: path))
        do {
            _ = try DatabaseQueue(path: path)
            Issue.record("expected an error")
        } catch let error as SQLiteError {
            #expect(error.code == .notADatabase)
            #expect(error.message?.contains(path) == true)
        }
    }

    /// A FIFO (a named pipe, or `/dev/fd/63` from a shell's `<(…)`) is not
    /// a database: opening it fails at once instead of waiting forever for
    /// a writer, read-only or not.
    @Test func aFIFOIsNotADatabaseAndTheOpenDoesNotWait() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("fifo.sqlite")
            #expect(mkfifo(path, 0o644) == 0)
            defer {
                // Releases an open that blocked (before the fix), so that no thread stays stuck.
                let writer = open(path, O_WRONLY | O_NONBLOCK)
                if writer >= 0 { close(writer) }
            }
            var configuration = Configuration()
            configuration.readOnly = true
            let readOnly = configuration
            let opens: [@Sendable () throws -> Void] = [
                { _ = try DatabaseQueue(path: path, configuration: readOnly) },
                { _ = try DatabasePool(path: path, configuration: readOnly) },
                { _ = try DatabaseQueue(path: path) },
            ]
            for open in opens {
                let error = try await withTimeout { () -> SQLiteError? in
                    do {
                        try open()
                        return nil
                    } catch let error as SQLiteError {
                        return error
                    }
                }
                #expect(error?.code == .notADatabase, "\(String(describing: error))")
                #expect(error?.message?.contains(path) == true)
            }
        }
    }

    @Test func fileColonPathIsPlain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let target = directory.file("x.sqlite")
        // As a URI this would create `target`; as a plain path its folder `file:` does not exist.
        #expect(throws: SQLiteError.self) { try DatabaseQueue(path: "file:\(target)?mode=rwc") }
        #expect(!FileManager.default.fileExists(atPath: target))
    }

    @Test func poolNeedsAFile() {
        #expect(throws: SQLiteError.self) { try DatabasePool(path: ":memory:") }
    }
}

/// What a server branches on to choose a response: a closed database, a
/// busy or locked one, a constraint, a full disk.
@Suite("Recognising errors")
struct ErrorKindTests {
    @Test func errorsAreEqualWhenAllTheirPropertiesAre() {
        let busy = SQLiteError(code: .busy, message: "database is locked", sql: "BEGIN IMMEDIATE")
        #expect(busy == SQLiteError(code: .busy, message: "database is locked", sql: "BEGIN IMMEDIATE"))
        #expect(busy != SQLiteError(code: .busy, message: "database is locked"))
        #expect(busy != SQLiteError(code: .locked, message: "database is locked", sql: "BEGIN IMMEDIATE"))
        #expect(
            SQLiteError(code: .error, message: "x", sql: "SELECT", offset: 1)
                != SQLiteError(code: .error, message: "x", sql: "SELECT", offset: 2))
        let set: Set<SQLiteError> = [busy, busy, SQLiteError(code: .full)]
        #expect(set.count == 2)
    }

    @Test func kindsFollowThePrimaryCode() {
        let busyOrLocked: [ResultCode] = [
            .busy, .locked, ResultCode(rawValue: 261 /* BUSY_RECOVERY */),
            ResultCode(rawValue: 517 /* BUSY_SNAPSHOT */),
            ResultCode(rawValue: 773 /* BUSY_TIMEOUT */), ResultCode(rawValue: 262 /* LOCKED_SHAREDCACHE */),
        ]
        for code in busyOrLocked {
            let error = SQLiteError(code: code)
            #expect(error.isBusyOrLocked, "\(code.rawValue)")
            #expect(!error.isConstraintViolation && !error.isDiskFull && !error.isDatabaseClosed)
        }
        for code: ResultCode in [.constraint, .constraintUnique, .constraintForeignKey, .constraintNotNull] {
            #expect(SQLiteError(code: code).isConstraintViolation, "\(code.rawValue)")
            #expect(!SQLiteError(code: code).isBusyOrLocked)
        }
        #expect(SQLiteError(code: .full).isDiskFull)
        #expect(!SQLiteError(code: .ioError).isDiskFull)
        // "database is closed" is a misuse with that message; other misuses are not.
        #expect(SQLiteError(code: .misuse, message: "database is closed").isDatabaseClosed)
        #expect(!SQLiteError(code: .misuse, message: "bad parameter or other API misuse").isDatabaseClosed)
        #expect(!SQLiteError(code: .busy, message: "database is closed").isDatabaseClosed)
    }

    @Test func realFailuresAreRecognised() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in try db.execute(sql: playerSchema + "CREATE TABLE blob (b BLOB)") }
            try await queue.write { db in try db.execute(sql: "INSERT INTO player (id, name) VALUES (1, 'a')") }

            // A constraint.
            await #expect {
                try await queue.write { db in try db.execute(sql: "INSERT INTO player (id, name) VALUES (1, 'b')") }
            } throws: { error in
                (error as? SQLiteError)?.isConstraintViolation == true
            }

            // Busy: another connection holds the write lock longer than the busy timeout.
            var impatient = Configuration()
            impatient.busyTimeout = .zero
            let other = try DatabaseQueue(path: path, configuration: impatient)
            let holding = Gate()
            let release = Gate()
            // From a thread of its own: a write on an idle writer runs on
            // the caller's thread, and this one blocks.
            let holder = Task(executorPreference: DedicatedThreadExecutor()) {
                try await queue.write { db in
                    try db.execute(sql: "INSERT INTO player (name) VALUES ('holder')")
                    holding.open()
                    release.blockingWait()
                }
            }
            try await withTimeout { await holding.wait() }
            await #expect {
                try await other.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('other')") }
            } throws: { error in
                (error as? SQLiteError)?.isBusyOrLocked == true
            }
            release.open()
            try await withTimeout { try await holder.value }

            // A full database: a page limit stands for the disk.
            try await queue.writeWithoutTransaction { db in
                _ = try db.fetchOne(Int.self, sql: "PRAGMA max_page_count = 8")
            }
            await #expect {
                try await queue.write { db in try db.execute(sql: "INSERT INTO blob VALUES (zeroblob(1000000))") }
            } throws: { error in
                (error as? SQLiteError)?.isDiskFull == true
            }

            // Closed.
            await other.close()
            await queue.close()
            await #expect {
                _ = try await queue.read { db in try db.fetchAll(String.self, sql: "SELECT name FROM player") }
            } throws: { error in
                (error as? SQLiteError)?.isDatabaseClosed == true
            }
        }
    }

    @Test func aReplacedFileIsRecognisedByItsType() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in try db.execute(sql: playerSchema) }
            try FileManager.default.removeItem(atPath: path)
            var caught: [DatabaseFileReplacedError] = []
            for name in ["lost", "lost again"] {
                do {
                    try await queue.write { db in
                        try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: [name])
                    }
                } catch let error as DatabaseFileReplacedError {
                    caught.append(error)
                }
            }
            #expect(caught.count == 2)
            #expect(caught.first?.path.hasSuffix("/db.sqlite") == true)
            #expect(Set(caught).count == 1)
            await queue.close()
        }
    }
}
