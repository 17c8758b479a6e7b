import Foundation

/// Claims of the idle connection: when a one-worker queue's worker sleeps
/// with nothing queued, a caller's thread may borrow its connection for one
/// access (no job, no wake-up) while the worker waits. Only for connections
/// whose commits never wait for a lock or a disk sync (see
/// Database+CallerThread.swift): the caller's thread belongs to Swift's
/// cooperative pool and must not block.
extension JobQueue {
    /// The sleeping worker's connection, now reserved for the calling
    /// thread, when no job waits and no claim is running; `nil` otherwise.
    func claimIdleConnection() -> Database? {
        locked {
            guard !isClaimed, !isClosed, hasNoQueuedJob, sleepingWorkers > 0, let offeredDatabase,
                offeredDatabase.callerThreadAccess.commitsNeverWait
            else {
                return nil
            }
            isClaimed = true
            claimingThread = pthread_self()
            return offeredDatabase
        }
    }

    /// Ends a claim, and wakes the worker if jobs arrived meanwhile or the queue closed.
    ///
    /// A broadcast, not a signal: a `close()` may be waiting on the same
    /// condition for the worker to exit, and a signal could wake it
    /// instead of the worker, which would then sleep forever.
    private func releaseClaim() {
        let wake = locked {
            isClaimed = false
            claimingThread = nil
            return sleepingWorkers > 0 && (!hasNoQueuedJob || isClosed)
        }
        if wake { pthread_cond_broadcast(condition) }
    }

    /// Runs `body` on the calling thread with the claimed `database`, then
    /// ends the claim, and queues the checkpoint that a commit left due.
    func runClaimed<T>(on database: Database, _ body: (Database) throws -> T) async throws -> T {
        database.callerThreadAccess.isRunning = true
        defer {
            database.callerThreadAccess.isRunning = false
            let checkpointIsDue = database.callerThreadAccess.checkpointIsDue
            releaseClaim()
            if checkpointIsDue { _ = push(CheckpointJob()) }
        }
        return try await runCancellably(on: database, body)
    }

    /// The worker sleeps with no job queued and no claim: the next claiming
    /// access gets its connection (for tests; right after a job, the
    /// worker may not be back to sleep yet, and a write then queues).
    var workerIsIdle: Bool { locked { sleepingWorkers > 0 && hasNoQueuedJob && !isClaimed } }
}
