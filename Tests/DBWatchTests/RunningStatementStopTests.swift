import CSQLite
import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatch

/// A statement that is already running stops when its access is cancelled
/// or its queue shuts down, even when the `sqlite3_interrupt` that comes
/// with it is lost (it landed before SQLite counted the statement as
/// running, and `sqlite3_step` cleared it): the connection's progress
/// check sees the flag.
@Suite("Stopping a running statement")
struct RunningStatementStopTests {
    /// Steps an endless statement on a thread of its own with SQLite's own
    /// `sqlite3_step`, past the flags check of `Database.step`, as a
    /// statement does whose interrupt was lost; returns its result code.
    static func stepEndlessly(on database: Database) async throws -> Int32 {
        let transfer = UnsafeTransfer(value: database)
        let stepping = Task(executorPreference: DedicatedThreadExecutor()) { () -> Int32 in
            let database = transfer.value
            var statement: OpaquePointer?
            let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
            guard sqlite3_prepare_v2(database.handle, sql, -1, &statement, nil) == SQLITE_OK else { return -1 }
            defer { sqlite3_finalize(statement) }
            return sqlite3_step(statement)
        }
        return try await withTimeout(seconds: 30) { await stepping.value }
    }

    /// Which flag a stopped statement's connection finds set.
    enum StopFlag: CaseIterable, Sendable {
        /// The access's cancellation.
        case cancellation
        /// The queue's shutdown at the end of a close's grace period.
        case shutdown
    }

    @Test(
        "a cancelled access's or a shut-down queue's statement stops although no interrupt reached it",
        arguments: StopFlag.allCases)
    func aSetFlagStopsAStatementWithoutAnInterrupt(flag: StopFlag) async throws {
        let database = try Database(path: ":memory:", configuration: Configuration())
        let set = CancellationFlag()
        set.set()
        switch flag {
        case .cancellation: database.cancellation = set
        case .shutdown: database.shutdown = set
        }
        let code = try await Self.stepEndlessly(on: database)
        #expect(code & 0xFF == SQLITE_INTERRUPT)
        database.close()
    }

    @Test("a statement of an access that is not cancelled runs to its end")
    func aStatementThatIsNotCancelledRunsToItsEnd() throws {
        let database = try Database(path: ":memory:", configuration: Configuration())
        database.cancellation = CancellationFlag()
        let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100000) SELECT count(*) FROM c"
        let count = try database.fetchOne(Int.self, sql: sql)
        #expect(count == 100_000)
        database.close()
    }
}
