import Foundation
import Testing

@testable import DBWatch

/// Review of fe24ba5: a cancelled open throws `CancellationError`.
@Suite("Cancelling an open (review)")
struct OpenCancellationReviewTests {
    /// `DatabasePool.init` turns on WAL mode after opening the writer; on a
    /// rollback-journal file that another connection is reading, that waits
    /// for the lock. Cancelling the task ended the wait, but the init threw
    /// `.busy`, unlike the open just before it.
    @Test func cancellingAPoolInitWhileItTurnsOnWALThrowsCancellationError() async throws {
        try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
            let path = directory.file("db.sqlite")
            let holder = try Database(path: path, configuration: Configuration())
            try holder.execute(sql: "CREATE TABLE t (v TEXT)")
            try holder.execute(sql: "BEGIN")
            _ = try holder.fetchAll(sql: "SELECT * FROM t")
            let waiting = Gate()
            var configuration = Configuration()
            configuration.busyTimeout = .seconds(3600)
            configuration.lockWaitWillStart = { waiting.open() }
            let open = Task(executorPreference: DedicatedThreadExecutor()) { [configuration] in
                try DatabasePool(path: path, configuration: configuration)
            }
            let outcome: Result<DatabasePool, any Error>? = try? await withTimeout(seconds: 30) {
                await waiting.wait()
                open.cancel()
                return await open.result
            }
            try holder.execute(sql: "COMMIT")
            #expect(outcome != nil, "cancelling did not end the wait")
            if let outcome {
                #expect(throws: CancellationError.self) { try outcome.get() }
                (try? outcome.get())?.close()
            }
            holder.close()
        }
    }
}
