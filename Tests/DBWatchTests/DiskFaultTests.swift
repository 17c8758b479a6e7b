import CFaultInjection
import CSQLite
import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatch

/// Disk faults, injected through a VFS over the default one whose writes or
/// reads fail on demand (`Tests/CFaultInjection`), selected with a URI
/// filename. Among them the trap of a commit that fails after SQLite called
/// the commit hook: the hook runs before the pages are written, so a full
/// disk or an I/O error can still fail the commit.
@Suite("Disk faults: failed commits, a full disk, read errors")
struct DiskFaultTests {
    /// A fault-injecting VFS registered under a name of its own for one test.
    final class FaultyDisk: @unchecked Sendable {  // the C side keeps its state in atomics
        let name = "dbwatch-faulty-\(UUID().uuidString)"
        let vfs: OpaquePointer

        init() throws {
            vfs = try #require(dbwatch_fault_vfs_register(name))
        }

        deinit { dbwatch_fault_vfs_unregister(vfs) }

        /// Makes every write, truncation and sync fail with `code` (nil: none).
        func failWrites(with code: Int32?) { dbwatch_fault_vfs_set_write_error(vfs, code ?? 0) }

        /// Makes every read fail with `code` (nil: none).
        func failReads(with code: Int32?) { dbwatch_fault_vfs_set_read_error(vfs, code ?? 0) }

        var failureCount: Int64 { dbwatch_fault_vfs_failure_count(vfs) }

        /// The URI that opens `path` through this VFS.
        func uri(_ path: String) -> String { "file:\(path)?vfs=\(name)" }

        /// A queue or a pool on `path`, opened through this VFS (the faults
        /// are the file's: an in-memory kind opens a queue on the file too).
        func open(_ kind: DatabaseKind, at path: String) throws -> any DatabaseWriter {
            kind == .pool
                ? try DatabasePool(path: uri(path), configuration: configuration)
                : try DatabaseQueue(path: uri(path), configuration: configuration)
        }

        var configuration: Configuration {
            var configuration = Configuration()
            configuration.allowsURIFilenames = true
            configuration.busyTimeout = .seconds(20)
            return configuration
        }
    }

    @Test("SQLite calls the commit hook, then the commit fails on a full disk")
    func commitHookFiresForACommitThatFails() throws {
        let disk = try FaultyDisk()
        try withTemporaryDirectoryNow { directory in
            var handle: OpaquePointer?
            let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI
            #expect(sqlite3_open_v2(disk.uri(directory.file("raw.sqlite")), &handle, flags, nil) == SQLITE_OK)
            defer { sqlite3_close_v2(handle) }
            #expect(
                sqlite3_exec(handle, "CREATE TABLE t (a); BEGIN; INSERT INTO t VALUES (1)", nil, nil, nil) == SQLITE_OK)
            let hookCalls = UnsafeMutablePointer<Int>.allocate(capacity: 1)
            defer { hookCalls.deallocate() }
            hookCalls.pointee = 0
            sqlite3_commit_hook(
                handle,
                { context in
                    context!.assumingMemoryBound(to: Int.self).pointee += 1
                    return 0
                }, hookCalls)
            disk.failWrites(with: SQLITE_FULL)
            #expect(sqlite3_exec(handle, "COMMIT", nil, nil, nil) & 0xFF == SQLITE_FULL)
            disk.failWrites(with: nil)
            #expect(hookCalls.pointee == 1)
            #expect(disk.failureCount > 0)
            if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            var statement: OpaquePointer?
            sqlite3_prepare_v2(handle, "SELECT count(*) FROM t", -1, &statement, nil)
            defer { sqlite3_finalize(statement) }
            #expect(sqlite3_step(statement) == SQLITE_ROW)
            #expect(sqlite3_column_int64(statement, 0) == 0)
        }
    }

    /// A write whose commit fails on a full disk publishes nothing, leaves
    /// nothing pending for the next commit, and loses no committed data; the
    /// connection and its observations keep working.
    @Test("a failed commit publishes nothing", arguments: DatabaseKind.onFile)
    func failedCommitPublishesNothing(kind: DatabaseKind) async throws {
        let disk = try FaultyDisk()
        try await withTemporaryDirectory { directory in
            let database = try disk.open(kind, at: directory.file("db.sqlite"))
            try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);
                        CREATE TABLE b (x);
                        INSERT INTO a VALUES (1, 'kept');
                        """)
            }
            let request = IntRequest("SELECT count(*) FROM a")
            let (values, task) = record(database.observe(request))
            defer { task.cancel() }
            try await values.wait(forCount: 1)
            #expect(values.values.last?.value == 1)
            let before = try #require(database.statistics(for: request))

            // The INSERT succeeds; the disk fills up before COMMIT.
            await #expect {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO a VALUES (2, 'lost')")
                    disk.failWrites(with: SQLITE_FULL)
                }
            } throws: { error in
                (error as? SQLiteError)?.primaryCode == .full
            }
            disk.failWrites(with: nil)
            #expect(disk.failureCount > 0)
            let afterFailure = try #require(database.statistics(for: request))
            #expect(afterFailure.changesNotified == before.changesNotified)

            // A commit of another table: had the failed transaction's changes
            // stayed pending, they would be published with it.
            try await database.write { db in try db.execute(sql: "INSERT INTO b VALUES (1)") }
            let afterOtherTable = try #require(database.statistics(for: request))
            #expect(afterOtherTable.changesNotified == before.changesNotified)

            try await database.write { db in try db.execute(sql: "INSERT INTO a VALUES (3, 'new')") }
            try await values.wait { $0.last?.value == 2 }
            let final = try #require(database.statistics(for: request))
            #expect(final.changesNotified == before.changesNotified + 1)
            #expect(values.values.compactMap(\.value) == [1, 2])

            let rows = try await database.read { db in
                try db.fetchAll(String.self, sql: "SELECT v FROM a ORDER BY id")
            }
            #expect(rows == ["kept", "new"])
            #expect(try await integrityCheck(of: database) == "ok")
            await database.close()
        }
    }

    /// A full disk fails a write with a typed error at whatever point the
    /// write reaches the disk (the rollback journal during the statement,
    /// the WAL at commit); committed data stays, and writes work again once
    /// there is space.
    @Test("a full disk is a typed error and loses nothing", arguments: DatabaseKind.onFile)
    func fullDiskLosesNothing(kind: DatabaseKind) async throws {
        let disk = try FaultyDisk()
        try await withTemporaryDirectory { directory in
            let database = try disk.open(kind, at: directory.file("db.sqlite"))
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO a VALUES (1, 'kept')")
            }
            disk.failWrites(with: SQLITE_FULL)
            for attempt in 0..<3 {
                await #expect {
                    try await database.write { db in
                        try db.execute(sql: "INSERT INTO a (v) SELECT 'lost' || ? FROM a", arguments: [attempt])
                    }
                } throws: { error in
                    guard let error = error as? SQLiteError else { return false }
                    return error.primaryCode == .full && error.code.isWriteFailure
                }
            }
            // Reads still work while the disk is full.
            #expect(try await database.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM a") } == 1)
            disk.failWrites(with: nil)
            try await database.write { db in try db.execute(sql: "INSERT INTO a VALUES (2, 'new')") }
            let rows = try await database.read { db in
                try db.fetchAll(String.self, sql: "SELECT v FROM a ORDER BY id")
            }
            #expect(rows == ["kept", "new"])
            #expect(try await integrityCheck(of: database) == "ok")
            await database.close()
        }
    }

    /// A full disk in the middle of migrating: the migration that hits it is
    /// rolled back, those before it stay applied, and migrating again once
    /// there is space applies the rest exactly once.
    @Test("a full disk during migrations loses nothing", arguments: DatabaseKind.onFile)
    func fullDiskDuringMigrations(kind: DatabaseKind) async throws {
        let migrator = try Migrator(migrations: [
            Migration(number: 1, name: "team", sql: "CREATE TABLE team (id INTEGER PRIMARY KEY, name TEXT);"),
            Migration(number: 2, name: "player", sql: "CREATE TABLE player (id INTEGER PRIMARY KEY, team_id INT);"),
            Migration(number: 3, name: "seed", sql: "INSERT INTO team (name) VALUES ('Reds');"),
        ])
        let disk = try FaultyDisk()
        try await withTemporaryDirectory { directory in
            let database = try disk.open(kind, at: directory.file("db.sqlite"))
            #expect(try await migrator.migrate(database, upTo: 1).map(\.number) == [1])
            disk.failWrites(with: SQLITE_FULL)
            await #expect {
                try await migrator.migrate(database)
            } throws: { error in
                switch error {
                case let error as MigrationError where error.code == .statementFailed:
                    error.sqliteError?.primaryCode == .full
                case let error as SQLiteError: error.primaryCode == .full
                default: false
                }
            }
            disk.failWrites(with: nil)
            let status = try await migrator.status(of: database)
            #expect(status.applied.map(\.number) == [1])
            #expect(status.pending.map(\.number) == [2, 3])
            #expect(try await migrator.migrate(database).map(\.number) == [2, 3])
            let teams = try await database.read { db in try db.fetchAll(String.self, sql: "SELECT name FROM team") }
            #expect(teams == ["Reds"])
            #expect(try await integrityCheck(of: database) == "ok")
            await database.close()
        }
    }

    /// Closing a pool checkpoints its WAL into the database file; on a full
    /// disk the checkpoint fails, and the committed data stays in the WAL,
    /// where the next open finds it.
    @Test func closingOnAFullDiskKeepsCommittedData() async throws {
        let disk = try FaultyDisk()
        try await withTemporaryDirectory { directory in
            let uri = disk.uri(directory.file("db.sqlite"))
            let pool = try DatabasePool(path: uri, configuration: disk.configuration)
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE a (v); INSERT INTO a VALUES (1), (2), (3)")
            }
            disk.failWrites(with: SQLITE_FULL)
            await pool.close()
            disk.failWrites(with: nil)
            #expect(FileManager.default.fileExists(atPath: directory.file("db.sqlite-wal")))
            let reopened = try DatabasePool(path: uri, configuration: disk.configuration)
            #expect(try await reopened.read { db in try db.fetchOne(Int.self, sql: "SELECT sum(v) FROM a") } == 6)
            #expect(try await integrityCheck(of: reopened) == "ok")
            await reopened.close()
        }
    }

    /// An I/O error while a refetch reads the database: the `Result` form
    /// delivers it as a typed error and recovers at the next change.
    @Test("a read error is delivered, then recovered from", arguments: DatabaseKind.onFile)
    func readErrorIsDeliveredThenRecovered(kind: DatabaseKind) async throws {
        let disk = try FaultyDisk()
        try await withTemporaryDirectory { directory in
            let database = try disk.open(kind, at: directory.file("db.sqlite"))
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE a (v); INSERT INTO a VALUES (1); CREATE TABLE b (v)")
            }
            let (values, task) = record(database.observe(IntRequest("SELECT sum(v) FROM a")))
            defer { task.cancel() }
            try await values.wait(forCount: 1)
            let readError = SQLITE_IOERR | (1 << 8)  // SQLITE_IOERR_READ
            switch kind {
            case .inMemory, .fileQueue:
                // The refetch runs on this connection after this job: reads
                // fail from the moment the INSERT has committed on its own.
                try await database.writeWithoutTransaction { db in
                    try db.execute(sql: "INSERT INTO a VALUES (2)")
                    disk.failReads(with: readError)
                }
            case .pool:
                // The refetch runs on a reader at once. The writer has the
                // pages it needs in its cache and writes the WAL without reading.
                disk.failReads(with: readError)
                try await database.write { db in try db.execute(sql: "INSERT INTO a VALUES (2)") }
            }
            try await values.wait { $0.count >= 2 }
            disk.failReads(with: nil)
            if case .failure(let error) = values.values[1] {
                #expect((error as? SQLiteError)?.primaryCode == .ioError)
                #expect((error as? SQLiteError)?.code.isWriteFailure == false, "a read error stored nothing")
            } else {
                Issue.record("expected a read error, got \(values.values[1])")
            }
            // After a failed fetch, any commit refetches: the error may
            // depend on anything.
            try await database.write { db in try db.execute(sql: "INSERT INTO b VALUES (0)") }
            try await values.wait { $0.last?.value == 3 }
            try await database.write { db in try db.execute(sql: "INSERT INTO a VALUES (3)") }
            try await values.wait { $0.last?.value == 6 }
            #expect(try await integrityCheck(of: database) == "ok")
            await database.close()
        }
    }
}

/// What `PRAGMA integrity_check` says of `database`.
private func integrityCheck(of database: any DatabaseWriter) async throws -> String? {
    try await database.read { db in try db.fetchOne(String.self, sql: "PRAGMA integrity_check") }
}

/// The synchronous form of ``withTemporaryDirectory(_:)``.
private func withTemporaryDirectoryNow<T>(_ body: (TemporaryDirectory) throws -> T) throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    return try body(directory)
}
