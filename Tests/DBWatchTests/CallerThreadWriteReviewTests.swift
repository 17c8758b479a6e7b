import CSQLite
import Foundation
import Testing

@testable import DBWatch

/// Review of the claims of an idle writer's connection (commit 2054798).
extension CallerThreadWriteTests {
    @Test(arguments: ["memory", "pool"])
    func closingFromAnotherThreadWhileAWriteIsClaimedReturns(kind: String) async throws {
        for _ in 0..<5 {
            try await withTemporaryDirectory { (directory: TemporaryDirectory) async throws in
                // close() waits on the queue's condition for the worker to exit;
                // the worker waits on the same condition for the claim to end. The
                // end of the claim must wake the worker, not only the closer.
                let database = try await makeDatabase(kind, in: directory)
                let jobs = writerJobs(of: database)
                let before = jobs.claimedAccessCount
                let claimed = Gate()
                let release = Gate()
                let write = Task(executorPreference: DedicatedThreadExecutor()) {
                    try await database.write { db in
                        claimed.open()
                        #expect(release.blockingWait())
                        try db.execute(sql: "INSERT INTO t VALUES ('claimed')")
                    }
                }
                await claimed.wait()
                #expect(jobs.claimedAccessCount - before == 1)
                let closed = Gate()
                Task(executorPreference: DedicatedThreadExecutor()) {
                    database.close()
                    closed.open()
                }
                try await waitUntil { jobs.closed }
                release.open()
                try await withTimeout(seconds: 20) {
                    try await write.value
                    await closed.wait()
                }
            }
        }
    }
}
