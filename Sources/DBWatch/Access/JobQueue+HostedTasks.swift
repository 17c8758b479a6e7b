import Foundation

/// Swift tasks hosted on a worker's thread by ``ConnectionExecutor``: while
/// one runs there, its accesses use that thread's connection inline.
extension JobQueue {
    /// Runs `run` (a Swift task's job) on the calling worker thread, whose
    /// connection is `database`: accesses that the task makes meanwhile run
    /// inline (see ``perform(claimingIdleConnection:_:)``).
    func hostTask(on database: Database, _ run: () -> Void) {
        let thread = pthread_self()
        locked { hostedTasks.append((thread, database)) }
        hostedTaskCount.add(1, ordering: .relaxed)
        run()
        hostedTaskCount.subtract(1, ordering: .relaxed)
        locked { hostedTasks.removeAll { pthread_equal($0.thread, thread) != 0 } }
    }

    /// The connection of the task hosted on the calling thread, when no job
    /// is waiting (an inline access must not overtake queued work) and the
    /// queue is open (after `close()`, the job path reports the closed
    /// database).
    func inlineConnection() -> Database? {
        // The count includes this thread's own increment if it hosts a task.
        guard hostedTaskCount.load(ordering: .relaxed) > 0 else { return nil }
        let thread = pthread_self()
        return locked {
            guard hasNoQueuedJob, !isClosed else { return nil }
            return hostedTasks.first { pthread_equal($0.thread, thread) != 0 }?.database
        }
    }
}
