import CSQLite
import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatch

/// Claims of an idle writer's connection by a caller's thread: closing,
/// cancellation and errors while a write holds the claim.
extension CallerThreadWriteTests {
    @Test(arguments: DatabaseKind.queueAndPool)
    func closingFromAnotherThreadWhileAWriteIsClaimedReturns(kind: DatabaseKind) async throws {
        for _ in 0..<5 {
            try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
                // close() waits on the queue's condition for the worker to exit;
                // the worker waits on the same condition for the claim to end. The
                // end of the claim must wake the worker, not only the closer.
                // (Within the grace period, long here: the write waits for the test.)
                var configuration = Configuration()
                configuration.closeGracePeriod = .seconds(60)
                let database = try await makeDatabase(kind, in: directory, configuration: configuration)
                let jobs = writerJobs(of: database)
                let onCallersThread = Protected(false)
                let claimed = Gate()
                let release = Gate()
                let write = Task(executorPreference: DedicatedThreadExecutor()) {
                    try await database.write { db in
                        onCallersThread.withLock { $0 = runsInATask() }
                        claimed.open()
                        #expect(release.blockingWait())
                        try db.execute(sql: "INSERT INTO t VALUES ('claimed')")
                    }
                }
                await claimed.wait()
                #expect(onCallersThread.withLock { $0 })
                let closed = Gate()
                Task(executorPreference: DedicatedThreadExecutor()) {
                    database.syncClose()
                    closed.open()
                }
                try await waitUntil { jobs.closed }
                release.open()
                try await withTimeout {
                    try await write.value
                    await closed.wait()
                }
            }
        }
    }

    /// Settings after which a commit can wait for a lock or sync to disk:
    /// a write must then run on the writer's thread, not claim it.
    static let settingsThatMakeCommitsWait = [
        "PRAGMA journal_mode = DELETE",  // COMMIT waits for readers' locks, syncs the journal
        "PRAGMA synchronous = FULL",  // every WAL commit syncs
        "PRAGMA wal_autocheckpoint = 1",  // SQLite's own hook checkpoints at COMMIT, on the caller's thread
        "PRAGMA main.journal_mode = TRUNCATE",
    ]

    @Test(arguments: settingsThatMakeCommitsWait)
    func aPoolWhoseSettingMakesCommitsWaitIsNotClaimed(setting: String) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let pool = try await makeDatabase(.pool, in: directory)
            let writer = try await writerThread(of: pool)
            try await pool.writeWithoutTransaction { db in try db.execute(sql: setting) }
            // Idle: without the setting, the write would be claimed.
            try await waitUntilIdle(pool)
            let thread = try await withTimeout {
                try await pool.write { db in
                    try db.execute(sql: "INSERT INTO t VALUES (zeroblob(10000))")
                    return pthread_self()
                }
            }
            #expect(pthread_equal(thread, writer) != 0)
            await pool.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func aCommitToAnAttachedFileNeverWaitsForItsLockOnTheCallersThread(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            // An attached file has a rollback journal: its COMMIT waits for
            // other connections' read locks, with the busy timeout.
            var configuration = Configuration()
            configuration.busyTimeout = .seconds(45)
            let database = try kind.open(in: directory, configuration: configuration)
            let writer = try await writerThread(of: database)
            let auxPath = directory.file("aux.sqlite")
            try await database.writeWithoutTransaction { db in
                try db.execute(sql: "ATTACH DATABASE ? AS aux", arguments: [auxPath])
                try db.execute(sql: "CREATE TABLE aux.t (v BLOB)")
            }
            let reader = try Database(path: auxPath, configuration: Configuration())
            try reader.execute(sql: "BEGIN")
            _ = try reader.fetchOne(Int.self, sql: "SELECT count(*) FROM t")
            let bodyThread = Protected<pthread_t?>(nil)
            // On the test's own thread, since it may block it.
            let write = Task(executorPreference: DedicatedThreadExecutor()) {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO aux.t VALUES ('written')")
                    bodyThread.withLock { $0 = pthread_self() }
                }
            }
            try await waitUntil { bodyThread.withLock { $0 != nil } }
            // The COMMIT now waits for the reader's lock: on the writer's thread.
            let thread = bodyThread.withLock { $0 }!
            #expect(pthread_equal(thread, writer) != 0)
            try reader.execute(sql: "COMMIT")
            try await withTimeout { try await write.value }
            reader.close()
            await database.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func aBusyTimeoutSetByTheUserIsKept(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            try await database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA busy_timeout = 12345") }
            try await withTimeout {
                try await database.write { db in try db.execute(sql: "INSERT INTO t VALUES (1)") }
            }
            let timeout = try await database.writeWithoutTransaction { db in
                try db.fetchOne(Int.self, sql: "PRAGMA busy_timeout")
            }
            #expect(timeout == 12345)
            await database.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func readingASettingKeepsClaims(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            try await database.writeWithoutTransaction { db in
                _ = try db.fetchOne(String.self, sql: "PRAGMA journal_mode")
                _ = try db.fetchOne(Int.self, sql: "PRAGMA busy_timeout")
                try db.execute(sql: "PRAGMA foreign_keys = ON")
            }
            try await waitUntilIdle(database)
            let claimed = try await withTimeout {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t VALUES (1)")
                    return runsInATask()
                }
            }
            #expect(claimed)
            await database.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func claimedQueuedAndHostedWritesAllLandAndTheObservationSeesTheLast(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            let claims = Protected(0)
            let (recorder, observing) = record(database.observe(IntRequest("SELECT count(*) FROM t")))
            try await recorder.wait { $0.last?.value == 0 }
            try await withTimeout {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<4 {
                        group.addTask {
                            for value in 0..<50 {
                                try await database.write { db in
                                    try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [writer * 100 + value])
                                    if runsInATask() { claims.withLock { $0 += 1 } }
                                }
                            }
                        }
                    }
                    group.addTask {
                        try await withTaskExecutorPreference(database.writerExecutor) {
                            for value in 0..<50 {
                                try await database.write { db in
                                    try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [1000 + value])
                                }
                            }
                        }
                    }
                    group.addTask {
                        for _ in 0..<50 {
                            try await database.writeWithoutTransaction { db in
                                try db.execute(sql: "INSERT INTO t VALUES ('job')")
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            try await recorder.wait { $0.last?.value == 300 }
            // The counts never go down: no refetch saw an older state after a newer one.
            let counts = recorder.values.compactMap(\.value)
            #expect(counts == counts.sorted())
            #expect(claims.withLock { $0 } > 0)
            observing.cancel()
            await database.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func aCommitThatFailsOnTheCallersThreadRollsBackAndLeavesTheConnectionUsable(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let database = try await makeDatabase(kind, in: directory)
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE parent (id INTEGER PRIMARY KEY)")
                try db.execute(
                    sql: "CREATE TABLE child (parentId INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
            }
            let (recorder, observing) = record(database.observe(IntRequest("SELECT count(*) FROM t")))
            try await recorder.wait { $0.last?.value == 0 }
            try await waitUntilIdle(database)
            let claimed = Protected(false)
            // COMMIT itself fails: the deferred foreign key has no parent.
            await #expect(throws: SQLiteError.self) {
                try await database.write { db in
                    claimed.withLock { $0 = runsInATask() }
                    try db.execute(sql: "INSERT INTO t VALUES ('rolled back')")
                    try db.execute(sql: "INSERT INTO child VALUES (42)")
                }
            }
            #expect(claimed.withLock { $0 })
            try await withTimeout {
                try await database.write { db in try db.execute(sql: "INSERT INTO t VALUES ('kept')") }
            }
            let values = try await database.read { db in try db.fetchAll(String.self, sql: "SELECT v FROM t") }
            #expect(values == ["kept"])
            try await recorder.wait { $0.last?.value == 1 }
            #expect(!recorder.values.contains { $0.value == 2 })
            observing.cancel()
            await database.close()
        }
    }
}
