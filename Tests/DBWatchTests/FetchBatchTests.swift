import CFaultInjection
import CSQLite
import DBWatchTestSupport
import Foundation
import Logging
import Testing

@testable import DBWatch

/// The refetches one commit starts run together (see `FetchBatch`): on one
/// reader, in one read transaction, except for observations whose last two
/// fetches were slow, which run alone and delay no other.
@Suite("Refetch batches")
struct FetchBatchTests {
    /// Where each fetch ran, and what it read.
    final class FetchLog: Sendable {
        let entries = Protected<[(salt: Int, connection: ObjectIdentifier, count: Int)]>([])
    }

    /// `count(*)` of `t`, plus `salt` (so that requests differ); `hook`
    /// runs after the count, on the fetching connection: it logs, spins or
    /// waits.
    struct HookedCount: Queryable {
        final class Hook: Sendable {
            let body: @Sendable (_ db: Database, _ salt: Int, _ count: Int) -> Void
            init(_ body: @escaping @Sendable (_ db: Database, _ salt: Int, _ count: Int) -> Void) { self.body = body }
        }

        static let defaultValue = -1
        let salt: Int
        let hook: Hook

        func fetch(_ db: Database) throws -> Int {
            let count = try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? 0
            hook.body(db, salt, count)
            return count + salt
        }

        static func == (lhs: Self, rhs: Self) -> Bool { lhs.salt == rhs.salt && lhs.hook === rhs.hook }
        func hash(into hasher: inout Hasher) { hasher.combine(salt) }
    }

    /// An empty table `t`.
    static let schemaOfTableT = "CREATE TABLE t (id INTEGER PRIMARY KEY)"

    final class FetchCounter: Sendable {
        private let value = Protected(0)
        func increment() { value.withLock { $0 += 1 } }
        var current: Int { value.withLock { $0 } }
    }

    @Test func theRefetchesOfOneCommitRunOnOneReader() async throws {
        try await withPool(schema: Self.schemaOfTableT) { pool in
            let log = FetchLog()
            let logging = HookedCount.Hook { db, salt, count in
                log.entries.withLock { $0.append((salt, ObjectIdentifier(db), count)) }
            }
            let observers = 10
            let recorders = (0..<observers).map { record(pool.observe(HookedCount(salt: $0 * 1000, hook: logging))) }
            defer { for (_, task) in recorders { task.cancel() } }
            for (recorder, _) in recorders { try await recorder.wait(forCount: 1) }

            try await pool.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
            for (salt, (recorder, _)) in recorders.enumerated() {
                try await recorder.wait { $0.last?.value == salt * 1000 + 1 }
            }
            let refetches = log.entries.withLock { $0.filter { $0.count == 1 } }
            #expect(refetches.count == observers)
            #expect(Set(refetches.map(\.connection)).count == 1, "one reader ran the commit's refetches")
        }
    }

    /// A driver that only says whether it fetches alone.
    final class StubDriver: ObservationDriving {
        let fetchesAlone: Bool
        let sharingKey: DriverSharingKey? = nil
        var isStopped: Bool { false }
        let touchedMark = TouchedMark()

        init(alone: Bool) { fetchesAlone = alone }

        func commitDidTouchRegion() -> Bool { true }
        func fetch(on database: Database, position: UInt64) -> Bool { false }
        func fetchFailed(_ error: any Error, startSerial: UInt64) -> Bool { false }
        func deliver(_ error: any Error) {}
        func endBecauseDatabaseClosed() {}
    }

    /// How the fetches of one commit are cut into batches, with 4 readers:
    /// quick ones together, in parts of at least `minimumBatchSize` from
    /// twice that on, at most one part per reader; each slow one alone.
    @Test func theFetchesOfACommitAreCutIntoBatches() {
        let queue = JobQueue()
        for _ in 0..<4 { queue.workerWillStart() }  // counted only: no thread runs the jobs
        let center = ObservationCenter(fetchQueue: queue, logger: Logger(label: "test"))
        func batches(quick: Int, slow: Int) -> Int {
            let before = queue.queuedJobCount
            let drivers =
                (0..<quick).map { _ in StubDriver(alone: false) } + (0..<slow).map { _ in StubDriver(alone: true) }
            center.enqueueFetches(of: drivers)
            return queue.queuedJobCount - before
        }
        #expect(batches(quick: 1, slow: 0) == 1)
        #expect(batches(quick: 63, slow: 0) == 1)
        #expect(batches(quick: 64, slow: 0) == 2)
        #expect(batches(quick: 100, slow: 0) == 3)
        #expect(batches(quick: 1000, slow: 0) == 4)
        #expect(batches(quick: 10, slow: 2) == 3)
        #expect(batches(quick: 0, slow: 1) == 1)
    }

    /// Many refetches are shared among the readers (4 here), in parts of at
    /// least `minimumBatchSize` (3 parts for 100): while one part waits, the
    /// others deliver.
    @Test func manyRefetchesAreSharedAmongTheReaders() async throws {
        try await withPool(schema: Self.schemaOfTableT) { pool in
            let gate = Gate()
            defer { gate.open() }
            // Observation 0 waits for the gate once the table has rows.
            let waiting = HookedCount.Hook { _, salt, count in
                if salt == 0 && count > 0 { gate.blockingWait() }
            }
            let observers = 100
            // Every value of every observation, as (salt, count).
            let values = ValueRecorder<(salt: Int, count: Int)>()
            let tasks = (0..<observers).map { index in
                Task {
                    for await result in pool.observe(HookedCount(salt: index * 1000, hook: waiting)).results {
                        if let value = result.value { values.append((index, value - index * 1000)) }
                    }
                }
            }
            defer { for task in tasks { task.cancel() } }
            try await values.wait { $0.count >= observers }

            try await pool.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
            // The part that holds observation 0 waits at the gate; the
            // others deliver meanwhile.
            let parts = min(4, observers / ObservationCenter.minimumBatchSize)
            let others = observers - (observers + parts - 1) / parts
            try await values.wait { $0.filter { $0.count == 1 }.count >= others }
            #expect(!gate.isOpen)
            #expect(!values.values.contains { $0.salt == 0 && $0.count == 1 })
            gate.open()
            try await values.wait { $0.filter { $0.count == 1 }.count == observers }
        }
    }

    @Test func aSlowFetchDelaysNoOtherObservation() async throws {
        try await withPool(schema: Self.schemaOfTableT) { pool in
            let gate = Gate()
            defer { gate.open() }
            let blocked = FetchCounter()
            // Slow: fetches of fewer than two rows take longer than
            // `slowFetch` (busy, no sleep); later ones wait for the gate.
            // Three slow ones: were they batched with the quick one, it would
            // most often come after one of them.
            let slowly = HookedCount.Hook { _, _, count in
                if count < 2 {
                    let end = ContinuousClock.now + ObservationDriver<HookedCount>.slowFetch * 2
                    while ContinuousClock.now < end {}
                } else {
                    blocked.increment()
                    gate.blockingWait()
                }
            }
            let slow = (1...3).map { record(pool.observe(HookedCount(salt: $0 * 1000, hook: slowly))) }
            let (quick, quickTask) = record(pool.observe(IntRequest("SELECT count(*) FROM t")))
            defer {
                quickTask.cancel()
                for (_, task) in slow { task.cancel() }
            }
            for (recorder, _) in slow { try await recorder.wait(forCount: 1) }
            try await quick.wait(forCount: 1)
            // Two slow fetches each (zero rows, then one).
            try await pool.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
            for (index, (recorder, _)) in slow.enumerated() {
                try await recorder.wait { $0.last?.value == (index + 1) * 1000 + 1 }
            }
            try await quick.wait { $0.last?.value == 1 }

            try await pool.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
            try await quick.wait { $0.last?.value == 2 }
            #expect(!gate.isOpen)
            #expect(slow.allSatisfy { $0.0.values.count == 2 }, "the slow ones are still fetching")

            gate.open()
            for (index, (recorder, _)) in slow.enumerated() {
                try await recorder.wait { $0.last?.value == (index + 1) * 1000 + 2 }
            }
            #expect(blocked.current == 3)
        }
    }
}

// MARK: - One fetch does not spoil the others

/// The fetches of a batch share one read transaction, so what one fetch
/// does to it (a read error that rolls it back, a commit landing between
/// its statements) must not reach the others.
extension FetchBatchTests {
    /// Gives each fetch of an armed refetch batch its role by arrival order
    /// (both run on one reader, one after the other).
    final class Roles: Sendable {
        private let state = Protected<(armed: Bool, arrivals: Int)>((false, 0))
        let firstStatementRead = Gate()
        let committed = Gate()
        let disk: DiskFaultTests.FaultyDisk

        init(disk: DiskFaultTests.FaultyDisk) { self.disk = disk }

        func arm() { state.withLock { $0.armed = true } }

        /// 0 for the first fetch of the armed batch, 1 for the second; nil otherwise.
        func arrive() -> Int? {
            state.withLock { state in
                guard state.armed else { return nil }
                defer { state.arrivals += 1 }
                return state.arrivals
            }
        }
    }

    /// `count(*)` of `t`, read twice. In an armed batch, the first fetch
    /// meets a read error (SQLite rolls back the transaction), and the second
    /// lets a commit land between its two statements.
    struct TwiceCount: Queryable {
        static let defaultValue: [Int] = []
        let salt: Int
        let roles: Roles

        func fetch(_ db: Database) throws -> [Int] {
            switch roles.arrive() {
            case 0?:
                roles.disk.failReads(with: SQLITE_IOERR | (1 << 8))
                defer { roles.disk.failReads(with: nil) }
                return [try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? -1]
            case 1?:
                let first = try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? -1
                roles.firstStatementRead.open()
                roles.committed.blockingWait()
                return [first, try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? -1]
            default:
                let first = try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? -1
                return [first, try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? -1]
            }
        }

        static func == (lhs: Self, rhs: Self) -> Bool { lhs.salt == rhs.salt && lhs.roles === rhs.roles }
        func hash(into hasher: inout Hasher) { hasher.combine(salt) }
    }

    /// A read error rolls the batch's transaction back (SQLite does so for
    /// I/O errors); the fetches after it in the batch must still each see
    /// one committed state, not one per statement.
    @Test func aReadErrorThatEndsTheTransactionLeavesLaterFetchesConsistent() async throws {
        let disk = try DiskFaultTests.FaultyDisk()
        try await withTemporaryDirectory { directory in
            let pool = try disk.open(.pool, at: directory.file("db.sqlite"))
            defer { pool.syncClose() }
            try await pool.write { db in try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)") }
            let roles = Roles(disk: disk)
            defer { roles.committed.open() }
            let recorders = (0..<2).map { record(pool.observe(TwiceCount(salt: $0, roles: roles))) }
            defer { for (_, task) in recorders { task.cancel() } }
            for (recorder, _) in recorders { try await recorder.wait(forCount: 1) }

            roles.arm()
            try await pool.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
            try await withTimeout { await roles.firstStatementRead.wait() }
            try await pool.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
            roles.committed.open()
            for (recorder, _) in recorders {
                try await recorder.wait { $0.last?.value?.first == 2 }
            }
            for (recorder, _) in recorders {
                for case .success(let counts) in recorder.values {
                    #expect(Set(counts).count == 1, "a value mixes two states: \(counts)")
                }
            }
        }
    }
}
