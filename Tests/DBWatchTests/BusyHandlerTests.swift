import CSQLite
import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatch

/// DBWatch's own busy handler (Database+LockWaits.swift) against
/// SQLite's `sqlite3_busy_timeout`.
@Suite("Waiting for another connection's lock: the busy handler")
struct BusyHandlerTests {
    /// `busyTimeout = 0` means "never wait", as `sqlite3_busy_timeout(0)`
    /// does: `lockWaitWillStart` must not announce a wait that never happens.
    @Test func aZeroBusyTimeoutAnnouncesNoWait() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let path = directory.file("db.sqlite")
            let holder = try Database(path: path, configuration: Configuration())
            try holder.execute(sql: "CREATE TABLE t (v TEXT)")
            try holder.execute(sql: "BEGIN EXCLUSIVE")
            let announced = Gate()
            var configuration = Configuration()
            configuration.busyTimeout = .zero
            configuration.lockWaitWillStart = { announced.open() }
            // Opening reads the header: it fails at once with busy.
            #expect { try Database(path: path, configuration: configuration) } throws: { error in
                ResultCode.busy ~= error
            }
            #expect(!announced.isOpen)
            holder.close()
        }
    }

    /// SQLite's busy timeout counts the time spent *waiting* during one
    /// `sqlite3_step` (its busy counter runs on across the step's waits).
    /// DBWatch measured the wall-clock time since the step's first wait
    /// began, work included: a statement that waited for its RESERVED lock
    /// and then worked longer than the busy timeout failed at once with
    /// SQLITE_BUSY when its commit had to wait for a reader to leave
    /// (rollback-journal mode), instead of waiting up to the timeout.
    @Test func workBetweenTwoWaitsOfOneStatementDoesNotCountAsWaiting() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let path = directory.file("db.sqlite")
            let setup = try Database(path: path, configuration: Configuration())
            try setup.execute(sql: "CREATE TABLE t (v)")
            setup.close()

            // Holds RESERVED: the statement's first wait, which it ends
            // itself as soon as the wait starts (a test task could wake up
            // after the busy timeout on a loaded machine).
            let writer = UncheckedBox(try Database(path: path, configuration: Configuration()))
            try writer.value.execute(sql: "BEGIN IMMEDIATE")
            let work = SlowWork(duration: .milliseconds(1500))
            var configuration = Configuration()
            configuration.busyTimeout = .seconds(1)
            configuration.lockWaitWillStart = { try? writer.value.execute(sql: "COMMIT") }

            let statement = Task(executorPreference: DedicatedThreadExecutor()) { [configuration] in
                let db = try Database(path: path, configuration: configuration)
                defer { db.close() }
                work.install(on: try db.openHandle())
                let result = Result { try db.execute(sql: "INSERT INTO t SELECT slow_work()") }
                return (result, ContinuousClock.now)
            }
            // The statement has its RESERVED lock and works: a reader now
            // holds SHARED, so the commit (EXCLUSIVE) will have to wait.
            try await withTimeout { await work.started.wait() }
            let reader = try Database(path: path, configuration: Configuration())
            try reader.execute(sql: "BEGIN DEFERRED")
            _ = try reader.fetchOne(Int.self, sql: "SELECT count(*) FROM t")
            work.proceed.open()

            let (result, failedAt) = try await withTimeout { try await statement.value }
            // Nobody releases the reader: the commit fails with busy either
            // way; what matters is that it waited (about 1 s), not 0 s.
            #expect(throws: (any Error).self) { try result.get() }
            let waited = failedAt - (work.endedAt ?? failedAt)
            #expect(waited >= .milliseconds(500), "the commit waited \(waited) for the reader, not ~1 s")
            try reader.execute(sql: "COMMIT")
            reader.close()
            writer.value.close()
        }
    }
}

/// Hands a connection to a `@Sendable` hook that runs while the test
/// itself does not use it.
private final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension BusyHandlerTests {
    /// A pool opens each reader connection on the reader's thread, at its
    /// first job. That open reads the file's header and may wait for
    /// another connection's lock (rollback-journal mode; WAL recovery), but
    /// the wait ran with no access cancellation and no task on that thread:
    /// cancelling the read did not end it (up to the busy timeout), and the
    /// read then failed with busy instead of `CancellationError`.
    @Test func cancellingAReadEndsItsReaderConnectionsOpeningWait() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let path = directory.file("db.sqlite")
            let holder = try Database(path: path, configuration: Configuration())
            try holder.execute(sql: "CREATE TABLE t (v TEXT)")
            let waiting = Gate()
            var configuration = Configuration()
            configuration.readOnly = true  // keeps the file in rollback-journal mode
            configuration.busyTimeout = .seconds(3600)
            configuration.lockWaitWillStart = { waiting.open() }
            let pool = try DatabasePool(path: path, configuration: configuration)
            try holder.execute(sql: "BEGIN EXCLUSIVE")
            let read = Task { try await pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") } }
            let outcome: Result<Int?, any Error>? = try? await withTimeout {
                await waiting.wait()
                read.cancel()
                return await read.result
            }
            // Unblocks a reader still waiting, whatever happened.
            try holder.execute(sql: "COMMIT")
            #expect(outcome != nil, "cancelling the read did not end its wait for the lock")
            if let outcome {
                #expect(throws: CancellationError.self) { try outcome.get() }
            }
            // The pool still reads once the lock is free.
            #expect(try await pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") } == 0)
            await pool.close()
            holder.close()
        }
    }
}

/// A SQL function `slow_work()` that stands for a statement's slow work: it
/// opens `started`, waits for `proceed`, then takes `duration`.
private final class SlowWork: Sendable {
    let duration: Duration
    let started = Gate()
    let proceed = Gate()
    private let end = Protected<ContinuousClock.Instant?>(nil)

    init(duration: Duration) {
        self.duration = duration
    }

    var endedAt: ContinuousClock.Instant? { end.withLock { $0 } }

    func install(on handle: OpaquePointer) {
        sqlite3_create_function_v2(
            handle, "slow_work", 0, SQLITE_UTF8, Unmanaged.passUnretained(self).toOpaque(),
            { context, _, _ in
                let work = Unmanaged<SlowWork>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
                work.started.open()
                work.proceed.blockingWait()
                // Simulated work, not ordering: the statement is busy this long.
                let (seconds, attoseconds) = work.duration.components
                Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
                work.end.withLock { $0 = .now }
                sqlite3_result_int(context, 1)
            }, nil, nil, nil)
    }
}
