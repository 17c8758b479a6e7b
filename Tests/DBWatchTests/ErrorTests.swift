import DBWatch
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
