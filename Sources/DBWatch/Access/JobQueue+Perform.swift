/// One database access, the entry of every `read` and `write`: it runs
/// inline in a hosted task, on a claimed idle connection, or as a job
/// queued for a worker, and cancelling the calling task cancels it.
extension JobQueue {
    /// Runs `body` on a connection thread and returns its result.
    ///
    /// Cancelling the calling task before the job starts throws
    /// `CancellationError` without running it; while it runs, cancellation
    /// interrupts the running statement (`sqlite3_interrupt`), and the
    /// resulting interrupt error is reported as `CancellationError`.
    ///
    /// Called from a task hosted on one of this queue's threads (see
    /// ``ConnectionExecutor``) while no job waits, `body` runs inline on
    /// that thread's connection, without a job round trip.
    ///
    /// With `claimingIdleConnection` on a queue that allows claims, when no
    /// job waits and the worker sleeps, `body` runs on the calling thread
    /// with the worker's connection (the worker waits meanwhile): no job, no
    /// wake-up. There it must not wait for locks: `BEGIN` throws
    /// `LockWaitRefused` instead, and the access is queued for the worker.
    func perform<T: Sendable>(
        claimingIdleConnection: Bool = false, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        if let database = inlineConnection() {
            return try await runCancellably(on: database, body)
        }
        if claimingIdleConnection && allowsClaims, let database = claimIdleConnection() {
            do {
                return try await runClaimed(on: database, body)
            } catch is Database.LockWaitRefused {
                // Another connection holds the lock: wait for it on the connection's thread.
            }
        }
        let job = AccessJob(body)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard job.start(continuation) else { return }
                if !push(job) { job.fail(with: SQLiteError.databaseClosed) }
            }
        } onCancel: {
            job.cancel()
        }
    }

    /// Runs `body` on the calling thread, whose connection `database` is for
    /// now; cancelling the task interrupts it.
    func runCancellably<T>(on database: Database, _ body: (Database) throws -> T) async throws -> T {
        let access = AccessCancellation()
        return try await withTaskCancellationHandler {
            try access.run(on: database, body)
        } onCancel: {
            access.cancel()
        }
    }
}
