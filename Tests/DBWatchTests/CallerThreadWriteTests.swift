import CSQLite
import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatch

@Suite("Writes on the caller's thread while the writer is idle")
struct CallerThreadWriteTests {
    static let endlessQuery = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

    /// A database of `kind` with a table `t`, its writer idle (except on a
    /// file queue, whose writes never claim the writer's connection).
    func makeDatabase(
        _ kind: DatabaseKind, in directory: TemporaryDirectory, configuration: Configuration = Configuration()
    ) async throws -> any DatabaseWriter {
        let database = try kind.open(in: directory, configuration: configuration)
        try await database.write { db in try db.execute(sql: "CREATE TABLE t (v BLOB)") }
        if kind != .fileQueue { try await waitUntilIdle(database) }
        return database
    }

    func writerJobs(of database: any DatabaseWriter) -> JobQueue {
        (database as? DatabasePool)?.writerJobs ?? (database as! DatabaseQueue).jobs
    }

    /// The writer's own thread: a `writeWithoutTransaction` job always runs
    /// there. Returns once the writer is idle again, so that the next write
    /// may claim its connection.
    func writerThread(of database: any DatabaseWriter) async throws -> pthread_t {
        let thread = try await database.writeWithoutTransaction { _ in pthread_self() }
        try await waitUntilIdle(database)
        return thread
    }

    /// Waits until the writer sleeps with nothing queued, which is when a
    /// write can claim its connection: right after a job it may still be on
    /// its way back to sleep, and a write then queues. Checked by claiming
    /// the connection (and releasing it at once) as a write would, whatever
    /// the connection's settings. A queue that lends no connection (a file
    /// queue, or writes on the caller's thread turned off) is never claimed:
    /// no need to wait.
    func waitUntilIdle(_ database: any DatabaseWriter) async throws {
        let jobs = writerJobs(of: database)
        guard jobs.allowsClaims else { return }
        try await waitUntil {
            guard jobs.claimIdleConnection(if: { _ in true }) != nil else { return false }
            jobs.releaseClaim()
            return true
        }
    }

    @Test(arguments: [DatabaseKind.inMemory, .pool, .fileQueue])
    func uncontendedWritesRunOnTheCallersThread(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            let writer = try await writerThread(of: database)
            let (onWritersThread, onCallersThread) = try await withTimeout {
                var onWritersThread = 0
                var onCallersThread = 0
                for value in 0..<100 {
                    let (thread, inTask) = try await database.write { db in
                        try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [value])
                        return (pthread_self(), runsInATask())
                    }
                    if pthread_equal(thread, writer) != 0 { onWritersThread += 1 }
                    if inTask { onCallersThread += 1 }
                }
                return (onWritersThread, onCallersThread)
            }
            #expect(try await database.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") } == 100)
            if kind == .fileQueue {
                // A file queue's rollback journal may wait for another process at COMMIT: never claimed.
                #expect(onCallersThread == 0)
                #expect(onWritersThread == 100)
            } else {
                #expect(onCallersThread == 100)
                #expect(onWritersThread == 0)
            }
            await database.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func turnedOffEveryWriteRunsOnTheWritersThread(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            var configuration = Configuration()
            configuration.writesOnCallerThread = false
            let database = try kind.open(in: directory, configuration: configuration)
            let writer = try await writerThread(of: database)
            let (threads, inTask) = try await withTimeout {
                var threads: [pthread_t] = []
                var inTask: [Bool] = []
                for _ in 0..<20 {
                    let (thread, inATask) = try await database.write { _ in (pthread_self(), runsInATask()) }
                    threads.append(thread)
                    inTask.append(inATask)
                }
                return (threads, inTask)
            }
            #expect(threads.allSatisfy { pthread_equal($0, writer) != 0 })
            #expect(!inTask.contains(true))
            await database.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func aWriteWhileTheWriterIsBusyQueuesBehindIt(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            let jobs = writerJobs(of: database)
            let writer = try await writerThread(of: database)
            let busy = Gate()
            let release = Gate()
            let blocker = Task {
                try await database.writeWithoutTransaction { db in
                    busy.open()
                    #expect(release.blockingWait())
                    try db.execute(sql: "INSERT INTO t VALUES ('first')")
                }
            }
            await busy.wait()
            let queued = Task {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t VALUES ('second')")
                    return (pthread_self(), runsInATask())
                }
            }
            try await waitUntil { jobs.queuedJobCount == 1 }
            release.open()
            let (thread, inTask) = try await withTimeout { try await queued.value }
            try await blocker.value
            // It waited its turn on the writer's thread, after the job that was running.
            #expect(pthread_equal(thread, writer) != 0)
            #expect(!inTask)
            let values = try await database.read { db in
                try db.fetchAll(String.self, sql: "SELECT v FROM t ORDER BY rowid")
            }
            #expect(values == ["first", "second"])
            await database.close()
        }
    }

    @Test func aLockHeldByAnotherConnectionIsWaitedForOnTheWritersThread() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            // A claimed BEGIN that waited for the lock would wait longer than the test does.
            var configuration = Configuration()
            configuration.busyTimeout = .seconds(45)
            let lockWait = Gate()
            let lockWaitThread = Protected<pthread_t?>(nil)
            configuration.lockWaitWillStart = {
                lockWaitThread.withLock { $0 = $0 ?? pthread_self() }
                lockWait.open()
            }
            let pool = try DatabasePool(path: directory.file("pool.sqlite"), configuration: configuration)
            try await pool.write { db in try db.execute(sql: "CREATE TABLE t (v BLOB)") }
            let writer = try await writerThread(of: pool)
            let other = try Database(path: directory.file("pool.sqlite"), configuration: Configuration())
            try other.execute(sql: "BEGIN IMMEDIATE")
            try other.execute(sql: "INSERT INTO t VALUES ('other')")
            let write = Task {
                try await pool.write { db in
                    try db.execute(sql: "INSERT INTO t VALUES ('pool')")
                    return pthread_self()
                }
            }
            // The claimed BEGIN failed at once instead of waiting on the
            // caller's thread; the write went to the writer's thread, which waits.
            try await withTimeout(seconds: isThreadSanitized ? 60 : 15) { await lockWait.wait() }
            #expect(lockWaitThread.withLock { $0 }.map { pthread_equal($0, writer) != 0 } == true)
            try other.execute(sql: "COMMIT")
            let thread = try await withTimeout { try await write.value }
            #expect(pthread_equal(thread, writer) != 0)
            let values = try await pool.read { db in try db.fetchAll(String.self, sql: "SELECT v FROM t ORDER BY rowid")
            }
            #expect(values == ["other", "pool"])
            other.close()
            await pool.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func cancellingTheTaskInterruptsAClaimedWrite(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            let claimed = Protected(false)
            let started = Gate()
            // The claimed write runs on the calling thread, busy until
            // cancelled: a thread of its own, so that the cases running in
            // parallel cannot take every cooperative thread.
            let task = Task(executorPreference: DedicatedThreadExecutor()) {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t VALUES ('rolled back')")
                    claimed.withLock { $0 = runsInATask() }
                    started.open()
                    return try db.fetchOne(Int.self, sql: CallerThreadWriteTests.endlessQuery)
                }
            }
            try await withTimeout {
                await started.wait()
                task.cancel()
                let result = await task.result
                #expect(throws: CancellationError.self) { try result.get() }
            }
            #expect(claimed.withLock { $0 })
            // The transaction rolled back, and the connection is usable by the next claim.
            let (count, claimedAgain) = try await database.write { db in
                (try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t"), runsInATask())
            }
            #expect(count == 0)
            #expect(claimedAgain)
            await database.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func closingInsideAClaimedWriteCommitsItThenRefusesMore(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            // Closing waits for the writer's thread, which waits for the
            // claim to end: it must not wait for the claim's own thread. The
            // claim runs on a thread of its own, so that a deadlock fails the
            // test instead of blocking a cooperative thread.
            let executor = DedicatedThreadExecutor()
            let (value, claimed) = try await withTimeout {
                try await Task(executorPreference: executor) {
                    try await database.write { db in
                        database.syncClose()
                        try db.execute(sql: "INSERT INTO t VALUES ('last')")
                        return (42, runsInATask())
                    }
                }.value
            }
            #expect(value == 42)
            #expect(claimed)
            await #expect(throws: SQLiteError.self) {
                try await database.write { db in try db.execute(sql: "INSERT INTO t VALUES ('refused')") }
            }
            if kind == .pool {
                let reopened = try DatabasePool(path: directory.file("db.sqlite"))
                let values = try await reopened.read { db in try db.fetchAll(String.self, sql: "SELECT v FROM t") }
                #expect(values == ["last"])
                await reopened.close()
            }
        }
    }

    /// Writes `pages` WAL pages' worth of rows, one page per row, in
    /// transactions of 50 rows, and returns the largest WAL file seen and
    /// how many of the writes ran on the caller's thread (in the task, not
    /// on the `writer` thread).
    func writeManyPages(_ pages: Int, to pool: DatabasePool, writer: pthread_t, walPath: String) async throws -> (
        largestWAL: Int, onCallersThread: Int
    ) {
        var largestWAL = 0
        var onCallersThread = 0
        for _ in 0..<(pages / 50) {
            let claimed = try await pool.write { db in
                for _ in 0..<50 { try db.execute(sql: "INSERT INTO t VALUES (zeroblob(4000))") }
                return runsInATask() && pthread_equal(pthread_self(), writer) == 0
            }
            if claimed { onCallersThread += 1 }
            let size = (try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? Int) ?? 0
            largestWAL = max(largestWAL, size)
        }
        return (largestWAL, onCallersThread)
    }

    @Test func checkpointsRunOnTheWritersThreadAndKeepTheWALBounded() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let pool = try await makeDatabase(.pool, in: directory) as! DatabasePool
            let walPath = directory.file("db.sqlite-wal")
            let writer = try await writerThread(of: pool)
            let pageSize = try await pool.read { db in try db.fetchOne(Int.self, sql: "PRAGMA page_size") } ?? 4096
            // 3,000 pages without a checkpoint would make a WAL of 3,000
            // pages; SQLite's automatic checkpoint restarts it after 1,000.
            let claimed = try await withTimeout {
                try await writeManyPages(3000, to: pool, writer: writer, walPath: walPath)
            }
            #expect(claimed.onCallersThread > 0)
            #expect(claimed.largestWAL < 1300 * pageSize)
            // Writes on the writer's own thread checkpoint there, at once.
            let hosted = try await withTimeout {
                try await withTaskExecutorPreference(pool.writerExecutor) {
                    try await writeManyPages(3000, to: pool, writer: writer, walPath: walPath)
                }
            }
            #expect(hosted.onCallersThread == 0)
            #expect(hosted.largestWAL < 1300 * pageSize)
            try await waitUntilIdle(pool)
            // A claimed write whose commit passes the threshold leaves the
            // checkpoint to the writer: it waits in the writer's queue behind
            // a job queued during the claim, which holds the writer.
            let jobs = pool.writerJobs
            let blocking = Gate()
            let release = Gate()
            let blocker = Protected<Task<Void, any Error>?>(nil)
            let claimedCommit = try await withTimeout {
                try await Task(executorPreference: DedicatedThreadExecutor()) {
                    try await pool.write { db in
                        for _ in 0..<1100 { try db.execute(sql: "INSERT INTO t VALUES (zeroblob(4000))") }
                        blocker.withLock { blocker in
                            blocker = Task {
                                try await pool.writeWithoutTransaction { _ in
                                    blocking.open()
                                    #expect(release.blockingWait())
                                }
                            }
                        }
                        let deadline = ContinuousClock.now + .seconds(defaultTestTimeout)
                        while jobs.queuedJobCount == 0 && ContinuousClock.now < deadline { sched_yield() }
                        return runsInATask()
                    }
                }.value
            }
            #expect(claimedCommit)
            await blocking.wait()
            #expect(jobs.queuedJobCount == 1)
            release.open()
            _ = try await withTimeout { try await blocker.withLock { $0 }?.value }
            await pool.close()
        }
    }
}
