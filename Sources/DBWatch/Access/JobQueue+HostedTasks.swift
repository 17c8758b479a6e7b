/// Swift tasks hosted on a worker's thread by ``ConnectionExecutor``: while
/// one runs there, its accesses use that thread's connection inline (see
/// ``inlineConnection()``, in JobQueue.swift with the state it reads).
extension JobQueue {
    /// Runs `run` (a Swift task's job) on the calling worker thread, whose
    /// connection is `database`: accesses that the task makes meanwhile run
    /// inline (see ``perform(claimingIdleConnection:_:)``).
    func hostTask(on database: Database, _ run: () -> Void) {
        hostedTaskWillRun(on: database)
        run()
        hostedTaskDidRun()
    }
}
