/// Runs Swift tasks on a connection thread, between its jobs.
///
/// A task that prefers this executor runs its code on the connection's own
/// thread, and its database accesses on that connection run inline, on the
/// spot, instead of queueing a job, suspending, waking the connection thread
/// and waking a cooperative thread again to resume. SQLite still runs only on
/// the connection's thread.
///
/// It is a serial resource: while such a task runs code that is not
/// database work, the connection's other jobs wait. An access runs inline
/// only when no job is waiting, so queued work is never overtaken.
///
/// ```swift
/// try await withTaskExecutorPreference(pool.writerExecutor) {
///     for line in lines {
///         try await pool.write { db in try db.execute(sql: "INSERT INTO log (line) VALUES (?)", arguments: [line]) }
///     }
/// }
/// ```
final class ConnectionExecutor: TaskExecutor {
    let queue: JobQueue

    init(queue: JobQueue) {
        self.queue = queue
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let hosted = HostedTaskJob(job: UnownedJob(job), executor: self)
        // A closed queue runs no more jobs: the task goes on elsewhere, and
        // its next access reports that the database is closed.
        if !queue.push(hosted) { hosted.runOnGlobalExecutor() }
    }
}

/// A Swift task's job, queued on a connection thread by ``ConnectionExecutor``.
final class HostedTaskJob: ConnectionJob {
    let job: UnownedJob
    let executor: ConnectionExecutor

    init(job: UnownedJob, executor: ConnectionExecutor) {
        self.job = job
        self.executor = executor
    }

    func run(on database: Database) {
        executor.queue.hostTask(on: database) {
            job.runSynchronously(on: executor.asUnownedTaskExecutor())
        }
    }

    /// The connection could not be opened, or the queue shut down before
    /// the job ran (on the thread that closes it): the task still runs on
    /// the global executor (a Swift job must never be dropped), without
    /// inline access; its accesses queue jobs and get the error.
    func fail(with error: any Error) {
        runOnGlobalExecutor()
    }

    func runOnGlobalExecutor() {
        globalConcurrentExecutor.enqueue(ExecutorJob(job))
    }
}
