import Foundation

/// A task executor with a thread of its own, for a test whose failure would
/// block the thread it runs on: a blocked cooperative thread could keep the
/// test's timeout from firing (there are only as many as cores). The thread
/// lives as long as the test process.
final class DedicatedThreadExecutor: TaskExecutor, @unchecked Sendable {  // `jobs` is guarded by `condition`
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    init() {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
        thread.name = "test.dedicated"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        condition.lock()
        jobs.append(UnownedJob(job))
        condition.signal()
        condition.unlock()
    }
}
