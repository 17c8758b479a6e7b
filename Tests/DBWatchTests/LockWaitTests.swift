import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatch

@Suite("Waiting for another connection's lock")
struct LockWaitTests {
    /// A queue on a file with the table `t`, which reports when one of its
    /// accesses starts waiting, and a second connection that holds the file
    /// locked with `lock` (`BEGIN IMMEDIATE` stops writes, `BEGIN
    /// EXCLUSIVE` reads too).
    func makeLockedQueue(
        in directory: TemporaryDirectory, busyTimeout: Duration, waiting: Gate, lock: String
    ) async throws -> (DatabaseQueue, holder: Database) {
        let path = directory.file("db.sqlite")
        var configuration = Configuration()
        configuration.busyTimeout = busyTimeout
        configuration.lockWaitWillStart = { waiting.open() }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (v TEXT)") }
        let holder = try Database(path: path, configuration: Configuration())
        try holder.execute(sql: lock)
        return (queue, holder)
    }

    @Test func aWriteWaitsForTheLockThenSucceeds() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let waiting = Gate()
            let (queue, holder) = try await makeLockedQueue(
                in: directory, busyTimeout: .seconds(60), waiting: waiting, lock: "BEGIN IMMEDIATE")
            try holder.execute(sql: "INSERT INTO t VALUES ('holder')")
            let write = Task { try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES ('queue')") } }
            try await withTimeout { await waiting.wait() }
            try holder.execute(sql: "COMMIT")
            try await withTimeout { try await write.value }
            let values = try await queue.read { db in
                try db.fetchAll(String.self, sql: "SELECT v FROM t ORDER BY rowid")
            }
            #expect(values == ["holder", "queue"])
            holder.close()
            await queue.close()
        }
    }

    @Test func theWaitEndsAtTheBusyTimeoutWithBusy() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let waiting = Gate()
            let (queue, holder) = try await makeLockedQueue(
                in: directory, busyTimeout: .milliseconds(100), waiting: waiting, lock: "BEGIN EXCLUSIVE")
            _ = try await withTimeout {
                await #expect {
                    try await queue.read { db in try db.fetchAll(String.self, sql: "SELECT v FROM t") }
                } throws: { error in
                    ResultCode.busy ~= error
                }
            }
            #expect(waiting.isOpen)
            holder.close()
            await queue.close()
        }
    }

    /// A statement that fails to prepare while another connection holds the
    /// file locked: SQLite checks whether the schema changed, which waits
    /// for the lock. `execute` then prepared it a second time as a script,
    /// which waited again (twice the busy timeout), and whose error would
    /// have been the one thrown had the two differed. A rollback-journal
    /// file: in WAL mode the lock would not stop that check.
    @Test func aStatementThatFailsToPrepareWaitsOnceAndThrowsItsOwnError() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let path = directory.file("db.sqlite")
            let waits = Protected(0)
            var configuration = Configuration()
            configuration.busyTimeout = .milliseconds(50)
            configuration.lockWaitWillStart = { waits.withLock { $0 += 1 } }
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try await queue.write { db in try db.execute(sql: "CREATE TABLE t (v TEXT)") }
            let holder = try Database(path: path, configuration: Configuration())
            try holder.execute(sql: "BEGIN EXCLUSIVE")
            let error = try await withTimeout {
                await #expect(throws: SQLiteError.self) {
                    try await queue.writeWithoutTransaction { db in try db.execute(sql: "SELECT v FROM missing") }
                }
            }
            #expect(error?.message == "no such table: missing")
            #expect(error?.sql == "SELECT v FROM missing")
            #expect(waits.withLock { $0 } == 1, "the failed statement waited for the lock more than once")
            holder.close()
            await queue.close()
        }
    }

    @Test(arguments: ["read", "write"])
    func cancellingEndsTheWaitAtOnce(access: String) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let waiting = Gate()
            // Far longer than the test may take: only the cancellation can end the wait.
            let (queue, holder) = try await makeLockedQueue(
                in: directory, busyTimeout: .seconds(3600), waiting: waiting, lock: "BEGIN EXCLUSIVE")
            let task = Task {
                if access == "read" {
                    _ = try await queue.read { db in try db.fetchAll(String.self, sql: "SELECT v FROM t") }
                } else {
                    try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES ('cancelled')") }
                }
            }
            try await withTimeout {
                await waiting.wait()
                task.cancel()
                let result = await task.result
                #expect(throws: CancellationError.self) { try result.get() }
            }
            // Once the lock is free, the connection works, and nothing was written.
            try holder.execute(sql: "COMMIT")
            let count = try await queue.write { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") }
            #expect(count == 0)
            holder.close()
            await queue.close()
        }
    }
}

extension LockWaitTests {
    /// Opens with `open` on a thread of its own (opening waits there, not on
    /// a cooperative thread) while another connection holds the lock that
    /// `lock` takes, cancels the task once the wait starts, and returns how
    /// the open ended (`nil`: cancelling did not end the wait in time).
    func cancelledOpen<T: Sendable>(
        holding lock: [String], _ open: @escaping @Sendable (String, Configuration) throws -> T
    ) async throws -> Result<T, any Error>? {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let path = directory.file("db.sqlite")
            let holder = try Database(path: path, configuration: Configuration())
            try holder.execute(sql: "CREATE TABLE t (v TEXT)")
            for sql in lock { try holder.execute(sql: sql) }
            let waiting = Gate()
            var configuration = Configuration()
            configuration.busyTimeout = .seconds(3600)
            configuration.lockWaitWillStart = { waiting.open() }
            let task = Task(executorPreference: DedicatedThreadExecutor()) { [configuration] in
                try open(path, configuration)
            }
            let outcome = try? await withTimeout {
                await waiting.wait()
                task.cancel()
                return await task.result
            }
            holder.close()
            return outcome
        }
    }

    @Test func cancellingATaskThatOpensEndsItsWait() async throws {
        // Opening reads the file's header, which waits for the lock.
        let outcome = try await cancelledOpen(holding: ["BEGIN EXCLUSIVE"]) { path, configuration in
            try DatabaseQueue(path: path, configuration: configuration)
        }
        let result = try #require(outcome, "cancelling did not end the wait")
        #expect(throws: CancellationError.self) { try result.get() }
    }

    /// `DatabasePool.init` turns on WAL mode after opening the writer; on a
    /// rollback-journal file that another connection is reading, that waits
    /// for the lock. Cancelling the task ends the wait, and the init throws
    /// `CancellationError` (not `.busy`), like a cancelled open.
    @Test func cancellingAPoolInitWhileItTurnsOnWALThrowsCancellationError() async throws {
        let outcome = try await cancelledOpen(holding: ["BEGIN", "SELECT * FROM t"]) { path, configuration in
            try DatabasePool(path: path, configuration: configuration)
        }
        let result = try #require(outcome, "cancelling did not end the wait")
        #expect(throws: CancellationError.self) { try result.get() }
        await (try? result.get())?.close()
    }
}
