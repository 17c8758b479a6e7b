import CFaultInjection
import CSQLite
import Foundation
import Testing

@testable import DBWatch

/// Review of `FetchBatch`: the fetches of a batch share one read
/// transaction, so what one fetch does to it must not reach the others.
@Suite("Refetch batches: one fetch does not spoil the others")
struct FetchBatchIsolationTests {
    /// Gives each fetch of an armed refetch batch its role by arrival order
    /// (both run on one reader, one after the other).
    final class Roles: Sendable {
        private let state = Locked<(armed: Bool, arrivals: Int)>((false, 0))
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
    /// one committed state (promise 4), not one per statement.
    @Test func aReadErrorThatEndsTheTransactionLeavesLaterFetchesConsistent() async throws {
        let disk = try DiskFaultTests.FaultyDisk()
        try await withTemporaryDirectory { directory in
            let pool = try disk.open(.pool, at: directory.file("db.sqlite"))
            defer { pool.close() }
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
