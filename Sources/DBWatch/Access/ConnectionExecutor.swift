/// Runs Swift tasks on a connection thread, between its jobs: the
/// executor behind ``DatabaseWriter/writerExecutor`` (where its use and
/// price are told).
///
/// A task that prefers it is queued as a job (``HostedTaskJob``); while
/// the job runs the task, its accesses on that connection run inline (see
/// JobQueue+HostedTasks.swift), and SQLite still runs only on the
/// connection's thread.
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
