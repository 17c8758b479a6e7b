import CSQLite
@testable import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

/// Closing a queue or pool while work runs: `close()` (and releasing the
/// last reference) lets running and queued work finish within the grace
/// period, then interrupts what still runs, fails what has not started and
/// ends every observation with "database is closed", without waiting for
/// an endless statement. A write either commits or is rolled back.
@Suite("Closing a database")
struct ClosingTests {
    /// Never ends on its own; reads `t`, so that it has a region.
    static let endlessSQL = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c, t"

    /// A request whose fetch runs ``endlessSQL``; it opens `started` first.
    struct EndlessCount: Queryable {
        static let defaultValue = 0
        let started: Gate
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.started === rhs.started }
        func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(started)) }
        func fetch(_ db: Database) throws -> Int {
            started.open()
            return try db.fetchOne(Int.self, sql: ClosingTests.endlessSQL) ?? 0
        }
    }

    /// A database of `kind` in `directory`, with a table `t` of one row.
    static func open(
        _ kind: DatabaseKind, in directory: TemporaryDirectory, gracePeriod: Duration = .milliseconds(200),
        configure: (inout Configuration) -> Void = { _ in }
    ) async throws -> any DatabaseWriter {
        var configuration = Configuration()
        configuration.closeGracePeriod = gracePeriod
        configuration.maximumReaderCount = 1
        configure(&configuration)
        let database = try kind.open(in: directory, configuration: configuration)
        try await database.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)") }
        return database
    }

    static func isClosedError(_ error: (any Error)?) -> Bool {
        (error as? SQLiteError)?.code == .misuse && (error as? SQLiteError)?.message == "database is closed"
    }

    /// Closes `database` on a thread of its own (close() blocks), and
    /// returns how long it took; a close that hangs fails the test.
    @discardableResult
    static func close(_ database: any DatabaseWriter) async throws -> Duration {
        let closing = Task(executorPreference: DedicatedThreadExecutor()) { () -> Duration in
            let start = ContinuousClock.now
            database.syncClose()
            return start.duration(to: .now)
        }
        return try await withTimeout(seconds: 30) { await closing.value }
    }

    /// The rows of `t` in the file, read by a fresh connection.
    static func rows(in path: String) async throws -> [Int] {
        let queue = try DatabaseQueue(path: path)
        defer { queue.syncClose() }
        return try await queue.read { db in try db.fetchAll(Int.self, sql: "SELECT a FROM t ORDER BY a") }
    }

    /// Waits until a connection other than a fresh one holds the write
    /// lock of the file at `path` (its write transaction began).
    static func waitUntilAnotherConnectionWrites(_ path: String) async throws {
        var handle: OpaquePointer?
        #expect(sqlite3_open(path, &handle) == SQLITE_OK)
        let probe = UnsafeTransfer(value: handle)
        defer { sqlite3_close(probe.value) }
        try await waitUntil {
            let code = sqlite3_exec(probe.value, "BEGIN IMMEDIATE", nil, nil, nil)
            if code == SQLITE_OK { sqlite3_exec(probe.value, "ROLLBACK", nil, nil, nil) }
            return code & 0xFF == SQLITE_BUSY
        }
    }

    // MARK: - Observations

    @Test(
        "close() interrupts an endless fetch; both forms of the observation end with the closed error",
        arguments: DatabaseKind.allCases)
    func closeInterruptsAnEndlessFetch(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let started = Gate()
            let throwing = Task { () -> (any Error)? in
                do {
                    for try await _ in database.observe(EndlessCount(started: started)) {}
                    return nil
                } catch {
                    return error
                }
            }
            try await withTimeout { await started.wait() }
            // Another request, subscribed once the endless fetch holds the
            // only reader (the two tasks start in no set order, and one
            // subscribed first would hold the reader and keep `started`
            // closed): on a queue or a one-reader pool its fetch waits
            // behind the endless one, and must not run after the close.
            let secondStarted = Gate()
            let (results, resultsTask) = record(database.observe(EndlessCount(started: secondStarted)))
            try await waitUntil { database.observationCount == 2 }

            let elapsed = try await Self.close(database)
            #expect(elapsed < .seconds(20))

            let thrown = try await withTimeout { await throwing.value }
            #expect(Self.isClosedError(thrown), "\(String(describing: thrown))")
            try await withTimeout { await resultsTask.value }
            #expect(results.values.count == 1, "\(results.values)")
            if case .failure(let error)? = results.values.last {
                #expect(Self.isClosedError(error), "\(error)")
            } else {
                Issue.record("the Result form did not end with the closed error: \(results.values)")
            }
            #expect(!secondStarted.isOpen, "the queued fetch ran")
            #expect(database.observationCount == 0)
        }
    }

    /// Holds the only reference to a database, so that a test can release it.
    final class Holder: @unchecked Sendable {  // written once by the test, then released on one thread
        var database: (any DatabaseWriter)?
        init(_ database: any DatabaseWriter) { self.database = database }
    }

    @Test(
        "releasing the last reference interrupts an endless fetch and ends the observation",
        arguments: DatabaseKind.allCases)
    func releasingTheLastReferenceInterruptsAnEndlessFetch(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let holder = Holder(try await Self.open(kind, in: directory))
            let started = Gate()
            let observation = holder.database!.observe(EndlessCount(started: started))
            let consumer = Task { () -> (any Error)? in
                do {
                    for try await _ in observation {}
                    return nil
                } catch {
                    return error
                }
            }
            try await withTimeout { await started.wait() }
            let releasing = Task(executorPreference: DedicatedThreadExecutor()) { holder.database = nil }
            try await withTimeout(seconds: 30) { await releasing.value }
            let thrown = try await withTimeout { await consumer.value }
            #expect(Self.isClosedError(thrown), "\(String(describing: thrown))")
        }
    }

    @Test(
        "a LiveQuery of an endless request returns from run() when the database closes",
        arguments: DatabaseKind.allCases)
    func liveQueryRunEndsAtClose(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let started = Gate()
            let live = LiveQuery(EndlessCount(started: started), in: database)
            let running = Task { await live.run() }
            try await withTimeout { await started.wait() }
            try await Self.close(database)
            try await withTimeout { await running.value }
            #expect(Self.isClosedError(live.error), "\(String(describing: live.error))")
        }
    }

    // MARK: - close() async

    /// `close() async` waits on a thread of its own: many tasks closing at
    /// once, while a write holds the close up for its grace period, leave
    /// the cooperative pool free (it has as many threads as cores), and
    /// they all return once the close is done.
    @Test(
        "close() async from many tasks while a write runs leaves the cooperative pool free",
        arguments: DatabaseKind.onFile)
    func asyncCloseDoesNotBlockCooperativeThreads(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory, gracePeriod: .seconds(60)) {
                // The write runs on the writer's thread, never on a cooperative one.
                $0.writesOnCallerThread = false
            }
            let writing = Gate()
            let release = Gate()
            let write = Task {
                try await database.write { db in
                    writing.open()
                    release.blockingWait()
                    try db.execute(sql: "INSERT INTO t VALUES (2)")
                }
            }
            try await withTimeout { await writing.wait() }
            let closed = Protected(0)
            let closers = (0..<16).map { _ in
                Task {
                    await database.close()
                    closed.withLock { $0 += 1 }
                }
            }
            // The closes wait for the write, and other tasks still run.
            try await waitUntil {
                (database as? DatabasePool)?.writerJobs.closed ?? (database as! DatabaseQueue).jobs.closed
            }
            let progress = try await withTimeout(seconds: 10) {
                await withTaskGroup(of: Int.self) { group in
                    for index in 0..<16 { group.addTask { index } }
                    return await group.reduce(0, +)
                }
            }
            #expect(progress == 120)
            #expect(closed.withLock { $0 } == 0)
            release.open()
            try await withTimeout { for closer in closers { await closer.value } }
            #expect(closed.withLock { $0 } == 16)
            // The write ended within the grace period: it committed.
            try await withTimeout { try await write.value }
            #expect(try await Self.rows(in: directory.file("db.sqlite")) == [1, 2])
            await #expect {
                _ = try await database.read { db in try db.fetchOne(Int.self, sql: "SELECT 1") }
            } throws: { error in
                Self.isClosedError(error)
            }
        }
    }

    /// `close() async` stops work like `close()`: after the grace period an
    /// endless read is interrupted and the observations end.
    @Test("close() async interrupts an endless read after the grace period", arguments: DatabaseKind.allCases)
    func asyncCloseInterruptsAnEndlessRead(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let (results, observing) = record(database.observe(IntRequest("SELECT count(*) FROM t")))
            try await results.wait(forCount: 1)
            let started = Gate()
            let endless = Task {
                try await database.read { db in
                    started.open()
                    return try db.fetchOne(Int.self, sql: Self.endlessSQL)
                }
            }
            try await withTimeout { await started.wait() }
            try await withTimeout(seconds: 30) { await database.close() }
            let endlessResult = try await withTimeout { await endless.result }
            #expect(Self.isClosedError(endlessResult.error), "\(endlessResult)")
            try await withTimeout { await observing.value }
            #expect(Self.isClosedError(results.values.last?.error), "\(results.values)")
            #expect(database.observationCount == 0)
            #expect(database.subscriberCount == 0)
        }
    }

    // MARK: - Accesses

    @Test(
        "close() interrupts an endless read, and a read queued behind it fails without running",
        arguments: DatabaseKind.allCases)
    func closeInterruptsAnEndlessRead(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let started = Gate()
            let endless = Task {
                try await database.read { db in
                    started.open()
                    return try db.fetchOne(Int.self, sql: Self.endlessSQL)
                }
            }
            try await withTimeout { await started.wait() }
            let queuedRan = Protected(false)
            let queued = Task {
                try await database.read { db in
                    queuedRan.withLock { $0 = true }
                    return try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t")
                }
            }
            let jobs = (database as? DatabasePool)?.readerJobs ?? (database as! DatabaseQueue).jobs
            try await waitUntil { jobs.queuedJobCount == 1 }

            try await Self.close(database)
            let endlessResult = try await withTimeout { await endless.result }
            #expect(Self.isClosedError(endlessResult.error), "\(endlessResult)")
            let queuedResult = try await withTimeout { await queued.result }
            #expect(Self.isClosedError(queuedResult.error), "\(queuedResult)")
            #expect(!queuedRan.withLock { $0 })
        }
    }

    /// A write that runs when `close()` is called and ends within the grace
    /// period commits, and the caller gets its value.
    @Test("a write running at close() and ending within the grace period commits", arguments: DatabaseKind.allCases)
    func aWriteEndingWithinTheGracePeriodCommits(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory, gracePeriod: .seconds(30))
            let started = Gate()
            let release = Gate()
            // From a thread of its own: a write on an idle writer runs on
            // the caller's thread, and this one blocks.
            let writing = Task(executorPreference: DedicatedThreadExecutor()) {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t VALUES (2)")
                    started.open()
                    release.blockingWait()
                    return db.changesCount
                }
            }
            try await withTimeout { await started.wait() }
            let closing = Task(executorPreference: DedicatedThreadExecutor()) { database.syncClose() }
            let jobs = (database as? DatabasePool)?.writerJobs ?? (database as! DatabaseQueue).jobs
            let readers = (database as? DatabasePool)?.readerJobs ?? jobs
            try await waitUntil { jobs.closed || readers.closed }
            release.open()
            let changes = try await withTimeout { try await writing.value }
            #expect(changes == 1)
            try await withTimeout { await closing.value }
            if kind != .inMemory {
                #expect(try await Self.rows(in: directory.file("db.sqlite")) == [1, 2])
            }
        }
    }

    /// A write still running when the grace period ends is interrupted and
    /// rolled back as a whole, and its caller gets the closed error: nothing
    /// of it is committed, and nothing is reported as written that was not.
    @Test(
        "a write still running after the grace period is rolled back with the closed error",
        arguments: DatabaseKind.allCases)
    func anEndlessWriteIsRolledBack(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let started = Gate()
            let writing = Task(executorPreference: DedicatedThreadExecutor()) {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t VALUES (2)")
                    started.open()
                    return try db.fetchOne(Int.self, sql: Self.endlessSQL)
                }
            }
            try await withTimeout { await started.wait() }
            try await Self.close(database)
            let result = try await withTimeout { await writing.result }
            #expect(Self.isClosedError(result.error), "\(result)")
            if kind != .inMemory {
                #expect(try await Self.rows(in: directory.file("db.sqlite")) == [1])
            }
        }
    }

    /// A task on `writerExecutor` runs its write inline on the writer's
    /// thread: the close interrupts it there too.
    @Test("close() interrupts an endless write of a task on writerExecutor", arguments: DatabaseKind.allCases)
    func closeInterruptsAnInlineWrite(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let started = Gate()
            let writing = Task(executorPreference: database.writerExecutor) {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t VALUES (2)")
                    started.open()
                    return try db.fetchOne(Int.self, sql: Self.endlessSQL)
                }
            }
            try await withTimeout { await started.wait() }
            try await Self.close(database)
            let result = try await withTimeout { await writing.result }
            #expect(Self.isClosedError(result.error), "\(result)")
            if kind != .inMemory {
                #expect(try await Self.rows(in: directory.file("db.sqlite")) == [1])
            }
        }
    }

    /// A write whose closure runs Swift code (not a statement) when the
    /// grace period ends: its next statement fails with the closed error,
    /// and the transaction rolls back.
    @Test(
        "a write between statements at the end of the grace period fails at its next statement",
        arguments: DatabaseKind.allCases)
    func aWriteBetweenStatementsFailsAtItsNextStatement(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let started = Gate()
            let jobs = (database as? DatabasePool)?.writerJobs ?? (database as! DatabaseQueue).jobs
            let writing = Task(executorPreference: DedicatedThreadExecutor()) {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t VALUES (2)")
                    started.open()
                    while !jobs.shutdown.isSet { usleep(1000) }
                    try db.execute(sql: "INSERT INTO t VALUES (3)")
                }
            }
            try await withTimeout { await started.wait() }
            try await Self.close(database)
            let result = try await withTimeout { await writing.result }
            #expect(Self.isClosedError(result.error), "\(result)")
            if kind != .inMemory {
                #expect(try await Self.rows(in: directory.file("db.sqlite")) == [1])
            }
        }
    }

    /// A write waiting for another connection's lock (here, the busy
    /// timeout is a minute) stops waiting when the grace period ends.
    @Test("close() ends a write's wait for another connection's lock", arguments: DatabaseKind.onFile)
    func closeEndsALockWait(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let waiting = Gate()
            let database = try await Self.open(kind, in: directory) { configuration in
                configuration.busyTimeout = .seconds(60)
                configuration.lockWaitWillStart = { waiting.open() }
            }
            var other: OpaquePointer?
            #expect(sqlite3_open(directory.file("db.sqlite"), &other) == SQLITE_OK)
            defer { sqlite3_close(other) }
            #expect(sqlite3_exec(other, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)
            let writing = Task { try await database.write { db in try db.execute(sql: "INSERT INTO t VALUES (2)") } }
            try await withTimeout { await waiting.wait() }
            let elapsed = try await Self.close(database)
            #expect(elapsed < .seconds(20))
            let result = try await withTimeout { await writing.result }
            #expect(Self.isClosedError(result.error), "\(result)")
            sqlite3_exec(other, "ROLLBACK", nil, nil, nil)
            #expect(try await Self.rows(in: directory.file("db.sqlite")) == [1])
        }
    }

    /// A migration whose statement does not end is interrupted at the end
    /// of the grace period; the migration rolls back and is not recorded.
    @Test("close() interrupts a running migration, which is not recorded", arguments: DatabaseKind.onFile)
    func closeInterruptsAMigration(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let migrator = try Migrator(migrations: [
                Migration(
                    number: 1, name: "endless", sql: "INSERT INTO t VALUES (2); CREATE TABLE u AS \(Self.endlessSQL)")
            ])
            let migrating = Task { try await migrator.migrate(database, checksIntegrity: false) }
            try await Self.waitUntilAnotherConnectionWrites(directory.file("db.sqlite"))
            try await Self.close(database)
            let result = try await withTimeout { await migrating.result }
            #expect(Self.isClosedError(result.error), "\(result)")
            #expect(try await Self.rows(in: directory.file("db.sqlite")) == [1])
        }
    }

    /// The last connection of a pool to close still checkpoints and
    /// removes the WAL file after a close that interrupted work.
    @Test("a pool closed after interrupting a fetch still removes its WAL file")
    func interruptedPoolStillRemovesItsWAL() async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(.pool, in: directory)
            let started = Gate()
            let (_, task) = record(database.observe(EndlessCount(started: started)))
            try await withTimeout { await started.wait() }
            try await Self.close(database)
            try await withTimeout { await task.value }
            #expect(!FileManager.default.fileExists(atPath: directory.file("db.sqlite-wal")))
            #expect(try await Self.rows(in: directory.file("db.sqlite")) == [1])
        }
    }
}

extension Result {
    /// The error of a failure, or `nil`.
    fileprivate var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
