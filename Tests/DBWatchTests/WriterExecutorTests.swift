import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatch

@Suite("Tasks on the writer's executor")
struct WriterExecutorTests {
    static let endlessQuery = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

    func makeDatabase(_ kind: DatabaseKind, in directory: TemporaryDirectory) async throws -> any DatabaseWriter {
        let database = try kind.open(in: directory)
        try await database.write { db in try db.execute(sql: "CREATE TABLE t (v TEXT)") }
        return database
    }

    func writerJobs(of database: any DatabaseWriter) -> JobQueue {
        (database as? DatabasePool)?.writerJobs ?? (database as! DatabaseQueue).jobs
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func writesRunInlineOnTheWritersThread(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            // A queued job runs on the connection's thread.
            let writerThread = try await database.writeWithoutTransaction { _ in pthread_self() }
            // Inline: in the calling task, on the connection's thread.
            let runsInline = { @Sendable in runsInATask() && pthread_equal(pthread_self(), writerThread) != 0 }
            let (thread, count, inline) = try await withTimeout {
                try await withTaskExecutorPreference(database.writerExecutor) {
                    var inline = 0
                    for value in 0..<100 {
                        let ranInline = try await database.write { db in
                            try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: ["\(value)"])
                            return runsInline()
                        }
                        if ranInline { inline += 1 }
                    }
                    let thread = pthread_self()
                    let (count, readInline) = try await database.read { db in
                        (try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t"), runsInline())
                    }
                    return (thread, count, readInline ? inline + 1 : inline)
                }
            }
            // The task's own code ran on the connection's thread, and so did its writes, without jobs.
            #expect(pthread_equal(thread, writerThread) != 0)
            #expect(count == 100)
            #expect(inline == (kind == .inMemory ? 101 : 100))
            // Outside such a task, accesses are queued jobs as before.
            let afterInline = try await database.write { db in
                try db.execute(sql: "INSERT INTO t VALUES ('after')")
                return runsInline()
            }
            #expect(!afterInline)
            await database.close()
        }
    }

    @Test func queuedWritesAreNotOvertaken() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (v TEXT)") }
        let othersDone = Gate()
        // The hosted task writes until the other task's 50 writes landed: if
        // inline writes overtook queued ones, the other task would never get
        // its turn and this would time out.
        let hostedWrites = try await withTimeout {
            try await withThrowingTaskGroup(of: Int.self) { group in
                group.addTask(executorPreference: queue.writerExecutor) {
                    var writes = 0
                    while !othersDone.isOpen {
                        try Task.checkCancellation()
                        try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES ('hosted')") }
                        writes += 1
                    }
                    return writes
                }
                group.addTask {
                    for _ in 0..<50 {
                        try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES ('other')") }
                    }
                    othersDone.open()
                    return 0
                }
                return try await group.reduce(0, +)
            }
        }
        let counts = try await queue.read { db in
            try db.fetchAll(sql: "SELECT v, count(*) AS n FROM t GROUP BY v ORDER BY v").map {
                "\(try $0.decode(String.self, at: "v"))=\(try $0.decode(Int.self, at: "n"))"
            }
        }
        #expect(counts == ["hosted=\(hostedWrites)", "other=50"])
        #expect(hostedWrites > 0)
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func cancellingTheTaskInterruptsItsInlineStatement(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            let inline = Protected(false)
            let started = Gate()
            let task = Task(executorPreference: database.writerExecutor) {
                try await database.writeWithoutTransaction { db in
                    inline.withLock { $0 = runsInATask() }
                    started.open()
                    return try db.fetchOne(Int.self, sql: WriterExecutorTests.endlessQuery)
                }
            }
            try await withTimeout {
                await started.wait()
                task.cancel()
                let result = await task.result
                #expect(throws: CancellationError.self) { try result.get() }
            }
            #expect(inline.withLock { $0 })
            // The connection is usable, and no interrupt leaks into the next statement.
            let value = try await database.write { db in try db.fetchOne(Int.self, sql: "SELECT 42") }
            #expect(value == 42)
            await database.close()
        }
    }

    @Test func anAlreadyCancelledTaskRunsNothing() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (v TEXT)") }
        let gate = Gate()
        let task = Task(executorPreference: queue.writerExecutor) {
            await gate.wait()
            try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES ('x')") }
        }
        task.cancel()
        gate.open()
        try await withTimeout {
            let result = await task.result
            #expect(throws: CancellationError.self) { try result.get() }
        }
        #expect(try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") } == 0)
    }

    @Test func aTaskOutlivingItsClosedPoolGetsAnError() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            try await pool.write { db in try db.execute(sql: "CREATE TABLE t (v TEXT)") }
            let wroteOnce = Gate()
            let poolClosed = Gate()
            let task = Task(executorPreference: pool.writerExecutor) {
                try await pool.write { db in try db.execute(sql: "INSERT INTO t VALUES ('x')") }
                wroteOnce.open()
                // Suspends off the writer's thread; resumes after the close,
                // when the writer's thread is gone.
                await poolClosed.wait()
                try await pool.write { db in try db.execute(sql: "INSERT INTO t VALUES ('y')") }
            }
            try await withTimeout {
                await wroteOnce.wait()
                await pool.close()
                poolClosed.open()
                let result = await task.result
                #expect(throws: SQLiteError.self) { try result.get() }
            }
        }
    }

    /// Closing from a task that runs on the writer's thread: the blocking
    /// `close()` does not wait for its own thread, and `close() async`
    /// suspends the task, so that the thread can end.
    @Test(arguments: DatabaseKind.queueAndPool, [false, true])
    func closingFromAHostedTaskEndsItsInlineAccesses(kind: DatabaseKind, async: Bool) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            let outcomes = try await withTimeout {
                await withTaskExecutorPreference(database.writerExecutor) { () async -> [Bool] in
                    if async { await database.close() } else { database.syncClose() }
                    let wrote =
                        (try? await database.write { db in try db.execute(sql: "INSERT INTO t VALUES ('x')") }) != nil
                    let read = try? await database.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t")
                    }
                    return [wrote, read != nil]
                }
            }
            #expect(outcomes == [false, false])
            if kind == .pool {
                let reopened = try DatabasePool(path: directory.file("db.sqlite"))
                #expect(try await reopened.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") } == 0)
                await reopened.close()
            }
        }
    }

    @Test func observationsOfAQueueKeepUpWithAHostedWriter() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (v TEXT)") }
        let (recorder, consumer) = record(queue.observe(IntRequest("SELECT count(*) FROM t")))
        defer { consumer.cancel() }
        try await recorder.wait(forCount: 1)
        try await withTimeout {
            try await withTaskExecutorPreference(queue.writerExecutor) {
                for _ in 0..<200 {
                    try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES ('x')") }
                }
            }
        }
        // The observation's fetches are jobs on the same thread: they still run.
        try await recorder.wait { values in values.last.map { (try? $0.get()) == 200 } ?? false }
    }
}
