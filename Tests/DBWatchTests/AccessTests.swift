@testable import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

@Suite("Queue and pool access")
struct AccessTests {
    static let endlessQuery = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

    @Test func connectionThreadsCarryTheirNamesForTopAndPerf() async throws {
        /// The OS name of the calling thread, as `top -H` and `perf` show it.
        @Sendable func osThreadName() throws -> String {
            try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            defer { pool.syncClose() }
            let queue = try DatabaseQueue()
            defer { queue.syncClose() }
            let writerName = try await pool.writeWithoutTransaction { _ in try osThreadName() }
            #expect(writerName == "dbwatch.writer")
            #expect(try await pool.read { _ in try osThreadName() }.hasPrefix("dbwatch.read."))
            #expect(try await queue.read { _ in try osThreadName() } == "dbwatch.queue")
        }
    }

    @Test func extremeDurationsAreClampedNotTrapped() async throws {
        var configuration = Configuration()
        configuration.busyTimeout = .seconds(Int64.max / 10)
        // About 24.8 days, the most SQLite takes; opening with it works.
        #expect(configuration.busyTimeoutMilliseconds == Int32.max)
        let queue = try DatabaseQueue(configuration: configuration)
        #expect(try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT 1") } == 1)
        configuration.busyTimeout = .seconds(-5)
        #expect(configuration.busyTimeoutMilliseconds == 0)
        configuration.busyTimeout = .milliseconds(1500)
        #expect(configuration.busyTimeoutMilliseconds == 1500)
        #expect(ExternalChangeDetection(pollInterval: .zero).effectivePollInterval == .milliseconds(10))
        #expect(ExternalChangeDetection(pollInterval: .seconds(-1)).effectivePollInterval == .milliseconds(10))
        #expect(ExternalChangeDetection(pollInterval: .seconds(2)).effectivePollInterval == .seconds(2))
    }

    @Test func poolReadersRunWhileWriterHoldsATransaction() async throws {
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            try await pool.write { db in try db.execute(sql: playerSchema) }
            let inside = Gate()
            let release = Gate()
            try await withTimeout {
                // The write may run on the calling thread, which then blocks: not a cooperative one.
                let write = Task(executorPreference: DedicatedThreadExecutor()) {
                    try await pool.write { db in
                        try db.execute(sql: "INSERT INTO player (name) VALUES ('pending')")
                        inside.open()
                        release.blockingWait()
                    }
                }
                await inside.wait()
                // Two readers in parallel, both on the last committed state.
                async let first = pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
                async let second = pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
                let counts = try await [first, second]
                #expect(counts == [0, 0])
                release.open()
                try await write.value
            }
            let count = try await pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
            #expect(count == 1)
        }
    }

    @Test func poolReadsSeeOneSnapshot() async throws {
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            try await pool.write { db in try db.execute(sql: playerSchema) }
            let firstRead = Gate()
            let committed = Gate()
            try await withTimeout {
                async let counts = pool.read { db -> [Int] in
                    let first = try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player")!
                    firstRead.open()
                    committed.blockingWait()
                    let second = try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player")!
                    return [first, second]
                }
                await firstRead.wait()
                try await pool.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('new')") }
                committed.open()
                #expect(try await counts == [0, 0])
            }
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func cancellationInterruptsALongQuery(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try kind.open(in: directory)
            let started = Gate()
            let stoppedAt = Protected<ContinuousClock.Instant?>(nil)
            let task = Task {
                try await database.read { db in
                    started.open()
                    do {
                        return try db.fetchOne(Int.self, sql: AccessTests.endlessQuery)
                    } catch {
                        stoppedAt.withLock { $0 = ContinuousClock.now }
                        throw error
                    }
                }
            }
            try await withTimeout {
                await started.wait()
                let cancelledAt = ContinuousClock.now
                task.cancel()
                let result = await task.result
                #expect(throws: CancellationError.self) { try result.get() }
                // When SQLite stopped the statement, not when this task was
                // scheduled again (which a loaded machine can delay).
                let stopped = try #require(stoppedAt.withLock { $0 })
                // The query never ends by itself; the bound only has to tell
                // "stopped at once" from "stopped by something else later".
                #expect(stopped - cancelledAt < .seconds(5))
            }
            // The connection is still usable.
            let value = try await database.read { db in try db.fetchOne(Int.self, sql: "SELECT 42") }
            #expect(value == 42)
        }
    }

    @Test func cancelledWriteRollsBack() async throws {
        let queue = try await makePlayerQueue()
        let started = Gate()
        // The write may run on the calling thread, busy until cancelled: not a cooperative one.
        let task = Task(executorPreference: DedicatedThreadExecutor()) {
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO player (name) VALUES ('never')")
                started.open()
                _ = try db.fetchOne(Int.self, sql: AccessTests.endlessQuery)
            }
        }
        try await withTimeout {
            await started.wait()
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
        }
        let count = try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
        #expect(count == 0)
    }

    @Test func cancellationBetweenStatementsStopsTheWrite() async throws {
        let queue = try await makePlayerQueue()
        let inserted = Gate()
        let cancelled = Gate()
        // The write may run on the calling thread, which then blocks: not a cooperative one.
        let task = Task(executorPreference: DedicatedThreadExecutor()) {
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO player (name) VALUES ('first')")
                inserted.open()
                cancelled.blockingWait()  // no statement runs while the task is cancelled
                try db.execute(sql: "INSERT INTO player (name) VALUES ('second')")
            }
        }
        try await withTimeout {
            await inserted.wait()
            task.cancel()
            cancelled.open()
            await #expect(throws: CancellationError.self) { try await task.value }
        }
        let count = try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
        #expect(count == 0)
    }

    @Test func alreadyCancelledTaskDoesNotRun() async throws {
        let queue = try await makePlayerQueue()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('never')") }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        let count = try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
        #expect(count == 0)
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func useAfterCloseThrows(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try kind.open(in: directory)
            _ = try await database.read { db in try db.fetchOne(Int.self, sql: "SELECT 1") }
            database.syncClose()
            database.syncClose()  // idempotent
            await database.close()  // also the async form
            do {
                _ = try await database.read { db in try db.fetchOne(Int.self, sql: "SELECT 1") }
                Issue.record("expected an error")
            } catch let error as SQLiteError {
                #expect(error.code == .misuse)
                #expect(error.message == "database is closed")
            }
            await #expect(throws: SQLiteError.self) {
                try await database.write { db in try db.execute(sql: "CREATE TABLE t (a)") }
            }
        }
    }

    @Test func releasingThePoolClosesItsConnections() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            var pool: DatabasePool? = try DatabasePool(path: path)
            try await pool!.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)") }
            _ = try await pool!.read { db in try db.fetchAll(sql: "SELECT * FROM t") }
            #expect(FileManager.default.fileExists(atPath: path + "-wal"))
            pool = nil
            // The last connection to close checkpoints and removes the WAL file.
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
            let queue = try DatabaseQueue(path: path)
            let count = try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") }
            #expect(count == 1)
        }
    }

    @Test func manyConcurrentReadsAndWrites() async throws {
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            try await pool.write { db in try db.execute(sql: playerSchema) }
            try await withTimeout {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            try await pool.write { db in
                                try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: ["p\(index)"])
                            }
                        }
                        group.addTask {
                            let count = try await pool.read { db in
                                try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player")!
                            }
                            #expect((0...50).contains(count))
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let count = try await pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
            #expect(count == 50)
        }
    }
}
