@testable import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

/// A database file deleted, or replaced by another file renamed over its
/// path, while a queue or pool has it open: writes would go to the old,
/// unlinked file and vanish at close, so they fail with
/// `DatabaseFileReplacedError`, with or without external change detection.
/// Reads go on reading the old file, whose content is consistent.
@Suite("A database file replaced or deleted while open")
struct ReplacedFileTests {
    enum Kind: String, CaseIterable, Sendable {
        case fileQueue, pool, poolWithDetection
    }

    enum Change: String, CaseIterable, Sendable {
        /// `unlink` of the file (and of its WAL, as `rm db.sqlite*` would).
        case deleted
        /// Another database renamed over the path.
        case replaced
    }

    /// Opens `kind` at `path` with a table `t` holding 1, and reads once
    /// (unless `reads` is false): a pool's only reader is then open on the file.
    static func open(_ kind: Kind, at path: String, readers: Int = 1, reads: Bool = true) async throws
        -> any DatabaseWriter
    {
        var configuration = Configuration()
        configuration.maximumReaderCount = readers
        let database: any DatabaseWriter
        switch kind {
        case .fileQueue:
            database = try DatabaseQueue(path: path, configuration: configuration)
        case .pool:
            database = try DatabasePool(path: path, configuration: configuration)
        case .poolWithDetection:
            configuration.externalChangeDetection = ExternalChangeDetection()
            database = try DatabasePool(path: path, configuration: configuration)
        }
        try await database.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)") }
        if reads { _ = try await database.read { db in try db.fetchAll(Int.self, sql: "SELECT a FROM t") } }
        return database
    }

    /// Deletes the file at `path`, or renames a new database (table `t`,
    /// rows 10 and 20) over it.
    static func apply(_ change: Change, to path: String) async throws {
        switch change {
        case .deleted:
            #expect(unlink(path) == 0)
            unlink(path + "-wal")
            unlink(path + "-shm")
        case .replaced:
            let replacement = path + ".new"
            let queue = try DatabaseQueue(path: replacement)
            try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (10), (20)") }
            await queue.close()
            #expect(rename(replacement, path) == 0)
        }
    }

    static func rows(at path: String) async throws -> [Int] {
        let queue = try DatabaseQueue(path: path)
        defer { queue.syncClose() }
        return try await queue.read { db in try db.fetchAll(Int.self, sql: "SELECT a FROM t ORDER BY a") }
    }

    @Test(
        "writes after the file was deleted or replaced throw DatabaseFileReplacedError",
        arguments: Kind.allCases, Change.allCases)
    func writesFailAfterTheChange(kind: Kind, change: Change) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let database = try await Self.open(kind, at: path)
            defer { database.syncClose() }
            try await Self.apply(change, to: path)

            await #expect(throws: DatabaseFileReplacedError.self) {
                try await database.write { db in try db.execute(sql: "INSERT INTO t VALUES (2)") }
            }
            await #expect(throws: DatabaseFileReplacedError.self) {
                try await database.writeWithoutTransaction { db in try db.execute(sql: "INSERT INTO t VALUES (3)") }
            }
            // Reads go on, on the old file: consistent, and nothing was added to it.
            let old = try await database.read { db in try db.fetchAll(Int.self, sql: "SELECT a FROM t ORDER BY a") }
            #expect(old == [1])
            await database.close()
            // The replacement is untouched; a deleted file stays deleted.
            switch change {
            case .deleted: #expect(!FileManager.default.fileExists(atPath: path))
            case .replaced: #expect(try await Self.rows(at: path) == [10, 20])
            }
        }
    }

    @Test(
        "a write during which the file is deleted or replaced rolls back and throws DatabaseFileReplacedError",
        arguments: [Kind.fileQueue, .pool], Change.allCases)
    func aWriteDuringTheChangeFails(kind: Kind, change: Change) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let database = try await Self.open(kind, at: path)
            defer { database.syncClose() }
            let replacement = path + ".new"
            if change == .replaced {
                let queue = try DatabaseQueue(path: replacement)
                try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (10)") }
                await queue.close()
            }
            await #expect(throws: DatabaseFileReplacedError.self) {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t VALUES (2)")
                    switch change {
                    case .deleted: #expect(unlink(path) == 0)
                    case .replaced: #expect(rename(replacement, path) == 0)
                    }
                }
            }
            let old = try await database.read { db in try db.fetchAll(Int.self, sql: "SELECT a FROM t ORDER BY a") }
            #expect(old == [1])
        }
    }

    @Test("a file moved back into place takes writes again", arguments: [Kind.fileQueue, .pool])
    func aFileMovedBackTakesWrites(kind: Kind) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let database = try await Self.open(kind, at: path)
            defer { database.syncClose() }
            #expect(rename(path, path + ".moved") == 0)
            await #expect(throws: DatabaseFileReplacedError.self) {
                try await database.write { db in try db.execute(sql: "INSERT INTO t VALUES (2)") }
            }
            #expect(rename(path + ".moved", path) == 0)
            try await database.write { db in try db.execute(sql: "INSERT INTO t VALUES (3)") }
            await database.close()
            #expect(try await Self.rows(at: path) == [1, 3])
        }
    }

    /// SQLite does not checkpoint a moved file at close, and its WAL file
    /// stays at the old name: the commits in it would be missing from the
    /// file at its new path, and read into whatever file next takes the old
    /// path. The close checkpoints them into the file first.
    @Test("a pool's file renamed while open has every commit at its new path after close")
    func aRenamedFileKeepsItsCommits() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let pool = try await Self.open(.pool, at: path)
            try await pool.write { db in try db.execute(sql: "INSERT INTO t VALUES (2), (3)") }
            #expect(rename(path, directory.file("moved.sqlite")) == 0)
            await pool.close()
            #expect(try await Self.rows(at: directory.file("moved.sqlite")) == [1, 2, 3])
            // A new database at the old path reads nothing of the old one.
            #expect(try await Self.rowCount(at: path) == nil)
        }
    }

    /// The rows of `t` in a file at `path` (created empty if missing), or
    /// `nil` when it has no table `t`.
    static func rowCount(at path: String) async throws -> Int? {
        let queue = try DatabaseQueue(path: path)
        defer { queue.syncClose() }
        return try await queue.read { db in
            try db.fetchOne(Int.self, sql: "SELECT count(*) FROM sqlite_master WHERE name = 't'") == 0
                ? nil : try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t")
        }
    }

    /// A pool's reader that opens after the change would read another file
    /// than the writer's (or none): it fails instead.
    @Test("a pool's reader opened after the change throws DatabaseFileReplacedError", arguments: Change.allCases)
    func aReaderOpenedAfterTheChangeFails(change: Change) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let pool = try await Self.open(.pool, at: path, readers: 2, reads: false)
            defer { pool.syncClose() }
            // A read holds the reader it opened, before the change; the
            // next read needs the other one, which opens after it.
            let started = Gate()
            let release = Gate()
            let holding = Task {
                try await pool.read { db in
                    started.open()
                    release.blockingWait()
                    return try db.fetchAll(Int.self, sql: "SELECT a FROM t")
                }
            }
            try await withTimeout { await started.wait() }
            try await Self.apply(change, to: path)
            await #expect(throws: DatabaseFileReplacedError.self) {
                try await pool.read { db in try db.fetchAll(Int.self, sql: "SELECT a FROM t") }
            }
            release.open()
            #expect(try await holding.value == [1])
        }
    }

    @Test("an in-memory queue has no file to check") func inMemoryQueueWrites() async throws {
        let queue = try DatabaseQueue()
        defer { queue.syncClose() }
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)") }
        #expect(try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") } == 1)
    }
}
