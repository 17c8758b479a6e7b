import Foundation
import Synchronization

/// A FIFO of jobs served by one or more worker threads, each owning a
/// connection (see ``ConnectionThread``).
///
/// Workers block on a condition variable while the queue is empty, so an
/// idle database costs no CPU. They are raw pthread calls, not
/// `NSCondition`: on Linux that class wraps the same calls (the thread
/// sanitizer sees them either way), and its timed wait takes a wall-clock
/// `Date`, which a change of the system time would move (a close's deadline
/// is on the monotonic clock). One lock guards all the state below,
/// and every field is private to this file, so that only code here can
/// touch it. Other files act on the queue through its methods: accesses
/// enter through ``perform(claimingIdleConnection:_:)``
/// (JobQueue+Perform.swift), the idle worker's connection can be lent to a
/// caller's thread (JobQueue+Claims.swift), and a Swift task can run on a
/// worker's thread (JobQueue+HostedTasks.swift).
final class JobQueue: @unchecked Sendable {  // every var is private and touched only with `mutex` held
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// The jobs waiting are `jobs[head...]`.
    private var jobs: [any ConnectionJob] = []
    private var head = 0
    private var isClosed = false
    private var runningWorkers = 0
    private var workerThreads: [pthread_t] = []
    /// Workers blocked in `pthread_cond_wait`: a push signals only if one is.
    private var sleepingWorkers = 0

    // The claims of the idle connection (JobQueue+Claims.swift).
    /// Whether an idle connection may be claimed by a caller: set for
    /// one-worker queues whose connection never waits for a lock once its
    /// transaction began.
    let allowsClaims: Bool
    /// The connection of the worker sleeping in `pop`, offered for claims.
    private var offeredDatabase: Database?
    /// A caller's thread is using the worker's connection: the worker waits.
    private var isClaimed = false
    /// The thread of that caller, so that a `close()` it makes does not wait for itself.
    private var claimingThread: pthread_t?

    // The tasks hosted on the workers' threads (JobQueue+HostedTasks.swift).
    /// The Swift tasks running right now on this queue's threads (tasks that
    /// prefer its ``ConnectionExecutor``), each with its thread's connection.
    /// Only that thread uses the connection.
    private var hostedTasks: [(thread: pthread_t, database: Database)] = []
    /// `hostedTasks.count`, read without the lock so that `perform` costs
    /// nothing more when no task is hosted.
    private let hostedTaskCount = Atomic<Int>(0)

    /// Set when the grace period of a close ends (see
    /// ``waitForWorkersUnlessCalledFromOne(shuttingDownAt:)``): every
    /// statement on the queue's connections then fails with "database is
    /// closed", and their waits for locks end.
    let shutdown = CancellationFlag()
    /// How long the observations' fetches on this queue took (the
    /// database's ``FetchDurations``): the queue is the one fetch queue of
    /// its database.
    let fetchDurations = DurationHistogramCounters()
    /// The open connections of the worker threads, for interrupting their
    /// statements at shutdown. A worker adds its connection when it opens
    /// it and removes it before closing it, under the lock, so that no
    /// handle here is ever closed.
    private var connections: [(thread: pthread_t, handle: InterruptHandle)] = []

    init(allowsClaims: Bool = false) {
        self.allowsClaims = allowsClaims
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        // A close waits for its deadline on the monotonic clock, which a
        // change of the system time does not move.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    @inline(__always)
    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Whether no job waits. Called with the lock held.
    private var hasNoQueuedJob: Bool { head == jobs.count }

    /// Adds a job. Returns `false` when the queue is closed.
    func push(_ job: any ConnectionJob) -> Bool {
        let (accepted, wake) = locked {
            guard !isClosed else { return (false, false) }
            jobs.append(job)
            // A claimed connection's worker is woken when the claim ends.
            return (true, sleepingWorkers > 0 && !isClaimed)
        }
        if wake { pthread_cond_signal(condition) }
        return accepted
    }

    /// Adds several jobs at once, waking at most one sleeping worker per job.
    /// Returns `false` when the queue is closed.
    func push(contentsOf newJobs: [any ConnectionJob]) -> Bool {
        let (accepted, wakeCount) = locked {
            guard !isClosed else { return (false, 0) }
            jobs.append(contentsOf: newJobs)
            return (true, isClaimed ? 0 : min(newJobs.count, sleepingWorkers))
        }
        for _ in 0..<wakeCount { pthread_cond_signal(condition) }
        return accepted
    }

    /// The next job, waiting for one; `nil` once the queue is closed and
    /// drained. While it waits, the worker offers its open `database` for
    /// claims, and it waits as long as a claim lasts.
    func pop(offering database: Database? = nil) -> (any ConnectionJob)? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while hasNoQueuedJob || isClaimed {
            if isClosed && !isClaimed && hasNoQueuedJob { return nil }
            sleepingWorkers += 1
            if allowsClaims, let database, !database.isClosed { offeredDatabase = database }
            pthread_cond_wait(condition, mutex)
            offeredDatabase = nil
            sleepingWorkers -= 1
        }
        let job = jobs[head]
        head += 1
        if head == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > jobs.count {
            jobs.removeFirst(head)
            head = 0
        }
        return job
    }

    /// Refuses new jobs; workers finish the queued ones and exit (see
    /// ``waitForWorkersUnlessCalledFromOne(shuttingDownAt:)`` for those
    /// still queued when the grace period ends).
    func close() {
        locked { isClosed = true }
        pthread_cond_broadcast(condition)
    }

    var closed: Bool { locked { isClosed } }

    /// The jobs waiting right now.
    var queuedJobCount: Int { locked { jobs.count - head } }

    /// The worker threads serving the queue (a pool's readers).
    var workerCount: Int { locked { runningWorkers } }

    // MARK: - Workers

    /// Counts a worker before its thread starts, so a close that follows waits for it.
    func workerWillStart() { locked { runningWorkers += 1 } }

    /// Called first thing on the worker's thread.
    func workerDidStart() { locked { workerThreads.append(pthread_self()) } }

    func workerDidExit() {
        locked {
            runningWorkers -= 1
            let current = pthread_self()
            workerThreads.removeAll { pthread_equal($0, current) != 0 }
        }
        pthread_cond_broadcast(condition)
    }

    /// The worker's connection is open: statements on it stop at shutdown.
    /// Called on the worker's thread.
    func connectionDidOpen(_ database: Database) {
        database.shutdown = shutdown
        guard let handle = database.interruptHandle else { return }
        locked { connections.append((pthread_self(), handle)) }
    }

    /// The worker is about to close its connection. Called on the worker's thread.
    func connectionWillClose() {
        let current = pthread_self()
        locked { connections.removeAll { pthread_equal($0.thread, current) != 0 } }
    }

    // MARK: - Claims of the idle connection (used by JobQueue+Claims.swift)

    /// The sleeping worker's connection, now reserved for the calling
    /// thread, when no job waits, no claim is running and `isClaimable`
    /// accepts it (a write claims only a connection whose commits never
    /// wait); `nil` otherwise.
    func claimIdleConnection(
        if isClaimable: (Database) -> Bool = { $0.callerThreadAccess.commitsNeverWait }
    ) -> Database? {
        locked {
            guard !isClaimed, !isClosed, hasNoQueuedJob, sleepingWorkers > 0, let offeredDatabase,
                isClaimable(offeredDatabase)
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
    func releaseClaim() {
        let wake = locked {
            isClaimed = false
            claimingThread = nil
            return sleepingWorkers > 0 && (!hasNoQueuedJob || isClosed)
        }
        if wake { pthread_cond_broadcast(condition) }
    }

    // MARK: - Hosted tasks (used by JobQueue+HostedTasks.swift)

    /// The calling worker thread, whose connection is `database`, starts
    /// running a hosted task.
    func hostedTaskWillRun(on database: Database) {
        let thread = pthread_self()
        locked { hostedTasks.append((thread, database)) }
        hostedTaskCount.add(1, ordering: .relaxed)
    }

    /// The hosted task on the calling worker thread returned.
    func hostedTaskDidRun() {
        let thread = pthread_self()
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

    // MARK: - Closing

    /// The instant `gracePeriod` from now on the monotonic clock, as the
    /// deadline of ``waitForWorkersUnlessCalledFromOne(shuttingDownAt:)``.
    static func deadline(after gracePeriod: Duration) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = max(gracePeriod, .zero).components
        // Clamped: a grace period of `.seconds(.max)` means "wait".
        let nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
        let (partial, overflow) = Int(now.tv_sec).addingReportingOverflow(Int(seconds))
        let (sum, carryOverflow) = partial.addingReportingOverflow(nanoseconds / 1_000_000_000)
        return timespec(tv_sec: overflow || carryOverflow ? .max : sum, tv_nsec: nanoseconds % 1_000_000_000)
    }

    /// Blocks until every worker thread has closed its connection and
    /// exited, unless called from a worker itself (a job that closes or
    /// releases its own database) or from the thread that claimed the
    /// connection, which would wait for themselves.
    ///
    /// Until `deadline` (see ``deadline(after:)``), the workers go on with
    /// the jobs running and queued. At `deadline` the queue shuts down:
    /// ``shutdown`` is set, so that every later statement on its
    /// connections fails with "database is closed" and waits for locks end;
    /// the statements running are interrupted (`sqlite3_interrupt`); and
    /// the jobs still queued fail with that error without running.
    func waitForWorkersUnlessCalledFromOne(shuttingDownAt deadline: timespec) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let current = pthread_self()
        if workerThreads.contains(where: { pthread_equal($0, current) != 0 }) { return }
        if let claimingThread, pthread_equal(claimingThread, current) != 0 { return }
        var deadline = deadline
        while runningWorkers > 0 {
            if shutdown.isSet {
                // An interrupt that lands after a statement checked the
                // shutdown flag but before SQLite counted it as running is
                // lost (`sqlite3_step` clears it then): interrupt again
                // until every worker has exited.
                var retry = Self.deadline(after: Self.shutdownInterruptInterval)
                if pthread_cond_timedwait(condition, mutex, &retry) == ETIMEDOUT {
                    for connection in connections { connection.handle.interrupt() }
                }
            } else if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT {
                let leftovers = shutDownLocked()
                // Failing a job resumes its caller: never under the lock.
                pthread_mutex_unlock(mutex)
                for job in leftovers { job.fail(with: SQLiteError.databaseClosed) }
                pthread_mutex_lock(mutex)
            }
        }
    }

    /// How often a shutdown interrupts the statements still running again.
    static let shutdownInterruptInterval = Duration.milliseconds(50)

    /// Sets ``shutdown``, interrupts the statements running on the
    /// workers' connections, and returns the jobs that did not start.
    /// Called with the lock held.
    private func shutDownLocked() -> [any ConnectionJob] {
        shutdown.set()
        for connection in connections { connection.handle.interrupt() }
        let leftovers = Array(jobs[head...])
        jobs.removeAll()
        head = 0
        return leftovers
    }
}
