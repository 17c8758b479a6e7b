@testable import DBWatch
import Foundation
import Testing
import DBWatchTestSupport

/// Commits by another process (the stock `sqlite3` shell) reach observations.
@Suite("External changes", RequiredProgram.sqlite3.trait)
struct ExternalChangeTests {
    /// A file database with external change detection, its path, and what an
    /// observation of `request` delivered (its first value already in).
    struct Watched<Request: Queryable> {
        let database: any DatabaseWriter
        let path: String
        let values: ValueRecorder<Result<Request.Value, any Error>>
    }

    /// Opens a pool (or what `open` makes) on a fresh file with detection
    /// on, runs `schema`, observes `request`, runs `body`, and cleans up.
    static func watching<Request: Queryable>(
        _ request: Request, schema: String,
        open: (String) throws -> any DatabaseWriter = { path in
            var configuration = Configuration()
            configuration.externalChangeDetection = ExternalChangeDetection()
            return try DatabasePool(path: path, configuration: configuration)
        },
        _ body: (Watched<Request>) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let database = try open(path)
            defer { database.syncClose() }
            try await database.writeWithoutTransaction(schema)
            let (values, task) = record(database.observe(request))
            defer { task.cancel() }
            try await values.wait(forCount: 1)
            try await body(Watched(database: database, path: path, values: values))
        }
    }

    @Test func insertsUpdatesDeletesAndRollback() async throws {
        let request = SQLRequest("SELECT id, v FROM t ORDER BY id")
        try await Self.watching(request, schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v)") { watched in
            let (path, values) = (watched.path, watched.values)
            try await SQLiteShell.run("INSERT INTO t VALUES (1, 'a'), (2, 'b')", on: path)
            try await values.wait { $0.last?.value?.count == 2 }
            try await SQLiteShell.run("UPDATE t SET v = 'z' WHERE id = 1", on: path)
            try await values.wait { $0.last?.value?.first?[1] == .text("z") }
            try await SQLiteShell.run("DELETE FROM t WHERE id = 2", on: path)
            try await values.wait { $0.last?.value?.count == 1 }

            // A rolled-back external transaction produces no value.
            let delivered = watched.database.statistics(for: request)!.valuesDelivered
            try await SQLiteShell.run("BEGIN; INSERT INTO t VALUES (3, 'rolled back'); ROLLBACK;", on: path)
            try await SQLiteShell.run("INSERT INTO t VALUES (4, 'sentinel')", on: path)
            try await values.wait { $0.last?.value?.last?[0] == .integer(4) }
            #expect(watched.database.statistics(for: request)!.valuesDelivered == delivered + 1)
            #expect(!values.values.contains { $0.value?.contains { $0[0] == .integer(3) } == true })
        }
    }

    @Test func ownWritesAreNotCountedTwice() async throws {
        let request = IntRequest("SELECT count(*) FROM t")
        try await Self.watching(request, schema: "CREATE TABLE t (a); CREATE TABLE other (b)") { watched in
            let pool = watched.database as! DatabasePool
            for _ in 0..<10 {
                try await pool.write { db in try db.execute(sql: "INSERT INTO other VALUES (1)") }
            }
            try await pool.write { db in try db.execute(sql: "INSERT INTO t VALUES (1)") }
            try await watched.values.wait { $0.last?.value == 1 }
            // Flush the monitor: one more check after all writes, through the writer queue.
            pool.externalChangeMonitor!.requestCheck()
            _ = try await pool.writeWithoutTransaction { _ in 0 }
            // Had the monitor taken one of them for another process's
            // commit, it would have notified the observation of it.
            #expect(pool.statistics(for: request)!.changesNotified == 1)
            #expect(pool.statistics(for: request)!.fetches == 2)
        }
    }

    @Test func checkpointsAndSameSizeWAL() async throws {
        try await Self.watching(IntRequest("SELECT v FROM t"), schema: "CREATE TABLE t (v); INSERT INTO t VALUES (0)") {
            watched in
            let (path, values) = (watched.path, watched.values)
            try await SQLiteShell.run("UPDATE t SET v = 1", on: path)
            try await values.wait { $0.last?.value == 1 }
            try await SQLiteShell.run("PRAGMA wal_checkpoint(TRUNCATE)", on: path)
            try await SQLiteShell.run("UPDATE t SET v = 2", on: path)
            try await values.wait { $0.last?.value == 2 }
            // A passive checkpoint keeps the WAL's size; the next commit
            // rewrites it from the start, leaving the size unchanged.
            let walPath = path + "-wal"
            try await SQLiteShell.run("PRAGMA wal_checkpoint(PASSIVE)", on: path)
            let sizeBefore = try FileManager.default.attributesOfItem(atPath: walPath)[.size] as? Int
            try await SQLiteShell.run("UPDATE t SET v = 3", on: path)
            let sizeAfter = try FileManager.default.attributesOfItem(atPath: walPath)[.size] as? Int
            #expect(sizeBefore == sizeAfter)
            try await values.wait { $0.last?.value == 3 }
        }
    }

    @Test func pollFindsWhatNotificationsMiss() async throws {
        let clock = TestClock()
        let pollOnly = ExternalChangeDetection(pollInterval: .seconds(30), usesFileNotifications: false, clock: clock)
        try await Self.watching(
            IntRequest("SELECT count(*) FROM t"), schema: "CREATE TABLE t (v)",
            open: { path in
                var configuration = Configuration()
                configuration.externalChangeDetection = pollOnly
                return try DatabasePool(path: path, configuration: configuration)
            }
        ) { watched in
            try await SQLiteShell.run("INSERT INTO t VALUES (1)", on: watched.path)
            // Nothing wakes the check until the poll interval passes on the clock.
            try await waitUntil { clock.sleeperCount == 1 }
            #expect(watched.values.values.count == 1)
            clock.advance(by: .seconds(30))
            try await watched.values.wait { $0.last?.value == 1 }
        }
    }

    /// A file database of `kind` in WAL mode with detection on and a 30 s
    /// poll: a commit that inotify misses shows as a timeout.
    static func walWithSlowPoll(_ kind: DatabaseKind, pollInterval: Duration = .seconds(30)) -> (String) throws ->
        any DatabaseWriter
    {
        { path in
            var configuration = Configuration()
            configuration.externalChangeDetection = ExternalChangeDetection(pollInterval: pollInterval)
            return try kind.open(at: path, configuration: configuration)
        }
    }

    /// A long-lived writer in another process (one `sqlite3` connection kept
    /// open) committing a small insert every 20 ms while the cores are busy:
    /// every commit reaches the observation through inotify (the poll, once
    /// an hour, never runs during the test). Its WAL write wakes the check
    /// before the commit shows in the `-shm` index, and a busy machine keeps
    /// the writer off a core in between for milliseconds: the check repeats
    /// while the writer holds its lock. A commit that inotify's check missed
    /// would never be seen, and times out; a slow machine only waits longer.
    /// Skipped under the thread sanitizer: it measures latency, which the
    /// sanitizer's slowdown makes meaningless, and its spinning threads
    /// would starve the rest of the sanitized suite.
    @Test(.disabled(if: isThreadSanitized, "measures latency under load"), arguments: DatabaseKind.onFile)
    func spacedCommitsOfAKeptConnectionUnderLoad(kind: DatabaseKind) async throws {
        try await Self.watching(
            IntRequest("SELECT count(*) FROM t"), schema: "PRAGMA journal_mode = WAL; CREATE TABLE t (v)",
            open: Self.walWithSlowPoll(kind, pollInterval: .seconds(3600))
        ) { watched in
            let session = try SQLiteShell.Session(database: watched.path)
            defer { session.kill() }
            var missed: Int?
            try await withCPULoad(threads: 2 * ProcessInfo.processInfo.activeProcessorCount) {
                for commit in 1...40 {
                    try await session.send("INSERT INTO t VALUES (\(commit));")
                    do {
                        try await watched.values.wait { $0.last?.value == commit }
                    } catch is TimeoutError {
                        missed = commit
                        break
                    }
                    try await Task.sleep(for: .milliseconds(20))  // the other process's pace
                }
            }
            #expect(missed == nil, "commit \(missed ?? 0) of 40 never seen (poll: once an hour)")
        }
    }

    /// A writer that keeps its lock in an open transaction after writing to
    /// the WAL (pages spilled from a small cache) is followed for the poll
    /// interval at most, not as long as it waits; its commit is then seen.
    @Test func anOpenTransactionIsFollowedForThePollIntervalAtMost() async throws {
        try await Self.watching(
            IntRequest("SELECT count(*) FROM t"), schema: "CREATE TABLE t (v)",
            open: Self.walWithSlowPoll(.pool, pollInterval: .milliseconds(300))
        ) { watched in
            let monitor = try #require((watched.database as! DatabasePool).externalChangeMonitor)
            let session = try SQLiteShell.Session(database: watched.path)
            defer { session.kill() }
            try await session.send(
                """
                PRAGMA cache_size = 1;
                BEGIN;
                WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) INSERT INTO t SELECT x FROM c;
                """)
            #expect(WALWriteLock.state(databasePath: watched.path) == .held)
            #expect(monitor.followStepCount > 0)
            // Followed every 64 ms for 300 ms; then nothing, polls aside.
            try await Task.sleep(for: .seconds(1))
            let steps = monitor.followStepCount
            let checks = monitor.checkCount
            try await Task.sleep(for: .seconds(1))
            #expect(monitor.followStepCount == steps)
            #expect(monitor.checkCount - checks <= 5)
            try await session.send("COMMIT;")
            try await watched.values.wait { $0.last?.value == 20000 }
        }
    }

    /// The lock table says whether a connection of another process is inside
    /// a write transaction of a WAL database.
    @Test func theWALWriteLockOfAnotherProcessIsSeen() async throws {
        try await Self.watching(IntRequest("SELECT count(*) FROM t"), schema: "CREATE TABLE t (v)") { watched in
            #expect(WALWriteLock.state(databasePath: watched.path) == .free)
            let session = try SQLiteShell.Session(database: watched.path)
            defer { session.kill() }
            try await session.send("BEGIN IMMEDIATE;")
            #expect(WALWriteLock.state(databasePath: watched.path) == .held)
            #expect(WALWriteLock.state(databasePath: watched.path, lockTable: "/nonexistent/locks") == .unknown)
            try await session.send("COMMIT;")
            #expect(WALWriteLock.state(databasePath: watched.path) == .free)
            #expect(WALWriteLock.state(databasePath: watched.path + ".none") == .free)
        }
    }

    @Test func lockTableLines() {
        func table(_ lines: String...) -> [UInt8] { Array(lines.joined(separator: "\n").utf8) }
        let inode: UInt64 = 5_333_868
        #expect(
            WALWriteLock.isWriteLocked(inode: inode, in: table("1: POSIX  ADVISORY  WRITE 4207 fe:00:5333868 120 120")))
        #expect(WALWriteLock.isWriteLocked(inode: inode, in: table("7: OFDLCK ADVISORY  WRITE -1 00:2f:5333868 0 EOF")))
        #expect(
            WALWriteLock.isWriteLocked(
                inode: inode,
                in: table(
                    "1: FLOCK  ADVISORY  WRITE 28709 fe:00:16220193 0 EOF",
                    "2: POSIX  ADVISORY  WRITE 4207 fe:00:5333868 118 127", "")))
        // Another byte, another file, a read lock, a waiting request.
        #expect(
            !WALWriteLock.isWriteLocked(inode: inode, in: table("1: POSIX  ADVISORY  WRITE 4207 fe:00:5333868 123 123"))
        )
        #expect(
            !WALWriteLock.isWriteLocked(
                inode: inode, in: table("1: POSIX  ADVISORY  WRITE 4207 fe:00:15333868 120 120")))
        #expect(
            !WALWriteLock.isWriteLocked(inode: inode, in: table("1: POSIX  ADVISORY  READ  4207 fe:00:5333868 120 120"))
        )
        #expect(
            !WALWriteLock.isWriteLocked(
                inode: inode, in: table("1: -> POSIX  ADVISORY  WRITE 4207 fe:00:5333868 120 120")))
        #expect(!WALWriteLock.isWriteLocked(inode: inode, in: table("garbage", "1: POSIX", "")))
    }

    @Test func killedWriterNeverShowsHalfAState() async throws {
        try await Self.watching(
            IntRequest("SELECT sum(v) FROM t"), schema: "CREATE TABLE t (v); INSERT INTO t VALUES (1)"
        ) {
            watched in
            let session = try SQLiteShell.Session(database: watched.path)
            // Enough rows to spill pages into the WAL before the commit.
            try await session.send(
                """
                PRAGMA cache_size = 1;
                BEGIN;
                WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) INSERT INTO t SELECT 1000 FROM c;
                """)
            session.kill()
            // The watcher keeps working, and never saw the uncommitted rows.
            try await SQLiteShell.run("INSERT INTO t VALUES (2)", on: watched.path)
            try await watched.values.wait { $0.last?.value == 3 }
            #expect(watched.values.values.compactMap(\.value).allSatisfy { $0 < 1000 })
            let count = try await watched.database.read { db in
                try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t")
            }
            #expect(count == 2)
        }
    }

    @Test func replacedFileIsReported() async throws {
        try await Self.watching(IntRequest("SELECT count(*) FROM t"), schema: "CREATE TABLE t (v)") { watched in
            let replacement = watched.path + ".new"
            try await SQLiteShell.run("CREATE TABLE t (v); INSERT INTO t VALUES (1)", on: replacement)
            #expect(rename(replacement, watched.path) == 0)
            try await watched.values.wait { results in
                results.contains {
                    if case .failure(let error) = $0 { return error is DatabaseFileReplacedError } else { return false }
                }
            }
        }
    }

    @Test func deletedFileEndsTheThrowingForm() async throws {
        try await Self.watching(IntRequest("SELECT count(*) FROM t"), schema: "CREATE TABLE t (v)") { watched in
            try await withTimeout { () async throws in
                var iterator = watched.database.observe(IntRequest("SELECT count(*) FROM t")).makeAsyncIterator()
                _ = try await iterator.next()
                #expect(unlink(watched.path) == 0)
                await #expect(throws: DatabaseFileReplacedError.self) { _ = try await iterator.next() }
            }
        }
    }

    /// A file overwritten in place with bytes that are not a database: the
    /// observation reports the error instead of keeping its last value.
    @Test func aFileOverwrittenWithGarbageIsReported() async throws {
        try await Self.watching(
            IntRequest("SELECT count(*) FROM t"), schema: "CREATE TABLE t (v)", open: Self.queueWithDetection
        ) { watched in
            let garbage = [UInt8](repeating: 0xA5, count: 100)
            let file = try #require(FileHandle(forWritingAtPath: watched.path))
            try file.write(contentsOf: garbage)
            try file.close()
            try await watched.values.wait { results in
                guard case .failure(let error as SQLiteError)? = results.last else { return false }
                return error.primaryCode == .notADatabase
            }
        }
    }

    @Test func rollbackJournalDatabasesAreWatched() async throws {
        // In rollback-journal mode every reader (a check, a refetch) takes a
        // brief shared lock that a committing writer must wait for: writers
        // use a busy timeout, as SQLite requires with any reader. The watcher
        // never checks while another connection's journal exists.
        try await Self.watching(
            IntRequest("SELECT count(*) FROM t"), schema: "CREATE TABLE t (v)", open: Self.queueWithDetection
        ) { watched in
            for _ in 0..<30 {
                try await SQLiteShell.run("INSERT INTO t VALUES (1)", on: watched.path, busyTimeout: 5000)
            }
            try await watched.values.wait { $0.last?.value == 30 }
        }
    }

    @Test func queueOnAFileDetectsToo() async throws {
        try await Self.watching(
            IntRequest("SELECT count(*) FROM t"), schema: "CREATE TABLE t (v)", open: Self.queueWithDetection
        ) { watched in
            try await SQLiteShell.run("INSERT INTO t VALUES (1)", on: watched.path)
            try await watched.values.wait { $0.last?.value == 1 }
        }
    }

    static func queueWithDetection(_ path: String) throws -> any DatabaseWriter {
        var configuration = Configuration()
        configuration.externalChangeDetection = ExternalChangeDetection()
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    @Test func detectionIsOffByDefault() async throws {
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            defer { pool.syncClose() }
            #expect(pool.externalChangeMonitor == nil)
        }
    }
}
