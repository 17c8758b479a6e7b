import Foundation
import Synchronization

/// A unit of work for a connection thread.
protocol ConnectionJob: AnyObject, Sendable {
    /// Runs on the connection's own thread.
    func run(on database: Database)
    /// The connection could not be opened, or the queue closed before the job ran.
    func fail(with error: any Error)
    /// Set when the job's access is cancelled: the connection that a worker
    /// opens for this job (its first) stops waiting for a lock then.
    var cancellation: CancellationFlag? { get }
}

extension ConnectionJob {
    var cancellation: CancellationFlag? { nil }
}

/// A FIFO of jobs served by one or more threads, each owning a connection.
///
/// Threads block on a condition variable while the queue is empty, so an
/// idle database costs no CPU.
final class JobQueue: @unchecked Sendable {  // every field is guarded by `mutex`
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var jobs: [any ConnectionJob] = []
    private var head = 0
    private var isClosed = false
    private var runningWorkers = 0
    private var workerThreads: [pthread_t] = []
    /// Workers blocked in `pthread_cond_wait`: a push signals only if one is.
    private var sleepingWorkers = 0
    /// The most jobs ever waiting at once (for tests of coalescing).
    private var highWaterMark = 0
    /// The Swift tasks running right now on this queue's threads (tasks that
    /// prefer its ``ConnectionExecutor``), each with its thread's connection.
    /// Only that thread uses the connection.
    private var hostedTasks: [(thread: pthread_t, database: Database)] = []
    /// `hostedTasks.count`, read without the lock so that `perform` costs
    /// nothing more when no task is hosted.
    private let hostedTaskCount = Atomic<Int>(0)
    /// Accesses that ran inline in a hosted task (for tests).
    private let inlineAccesses = Atomic<Int>(0)
    /// Whether an idle connection may be claimed by a caller (see
    /// ``perform(claimingIdleConnection:_:)``): set for one-worker queues
    /// whose connection never waits for a lock once its transaction began.
    private let allowsClaims: Bool
    /// The connection of the worker sleeping in `pop`, offered for claims.
    private var offeredDatabase: Database?
    /// A caller's thread is using the worker's connection: the worker waits.
    private var isClaimed = false
    /// The thread of that caller, so that a `close()` it makes does not wait for itself.
    private var claimingThread: pthread_t?
    /// Accesses that ran on the caller's thread by claiming the idle connection (for tests).
    private let claimedAccesses = Atomic<Int>(0)
    /// Claimed accesses that went to the worker's thread because another
    /// connection held the lock (for tests).
    private let lockWaitFallbacks = Atomic<Int>(0)
    /// Checkpoints that commits on a caller's thread left to the worker (for tests).
    private let deferredCheckpoints = Atomic<Int>(0)

    /// Set when the grace period of a close ends (see
    /// ``waitForWorkersUnlessCalledFromOne(shuttingDownAt:)``): every
    /// statement on the queue's connections then fails with "database is
    /// closed", and their waits for locks end.
    let shutdown = CancellationFlag()
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

    /// Adds a job. Returns `false` when the queue is closed.
    func push(_ job: any ConnectionJob) -> Bool {
        let (accepted, wake) = locked {
            guard !isClosed else { return (false, false) }
            jobs.append(job)
            highWaterMark = max(highWaterMark, jobs.count - head)
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
            highWaterMark = max(highWaterMark, jobs.count - head)
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
        while head == jobs.count || isClaimed {
            if isClosed && !isClaimed && head == jobs.count { return nil }
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

    /// The worker sleeps with no job queued and no claim: the next claiming
    /// access gets its connection (for tests; right after a job, the
    /// worker may not be back to sleep yet, and a write then queues).
    var workerIsIdle: Bool { locked { sleepingWorkers > 0 && head == jobs.count && !isClaimed } }

    /// The jobs waiting right now (for tests).
    var queuedJobCount: Int { locked { jobs.count - head } }

    /// The most jobs that ever waited at once.
    var maximumQueuedJobs: Int { locked { highWaterMark } }

    /// How many accesses ran on a caller's thread, on a claimed connection, so far.
    var claimedAccessCount: Int { claimedAccesses.load(ordering: .relaxed) }

    /// How many claimed accesses went to the worker's thread to wait for a lock.
    var lockWaitFallbackCount: Int { lockWaitFallbacks.load(ordering: .relaxed) }

    /// How many checkpoints were left to the worker by commits on a caller's thread.
    var deferredCheckpointCount: Int { deferredCheckpoints.load(ordering: .relaxed) }

    /// How many accesses ran inline in a hosted task so far.
    var inlineAccessCount: Int { inlineAccesses.load(ordering: .relaxed) }

    /// The worker threads serving the queue (a pool's readers).
    var workerCount: Int { locked { runningWorkers } }

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
                pthread_cond_wait(condition, mutex)
            } else if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT {
                let leftovers = shutDownLocked()
                // Failing a job resumes its caller: never under the lock.
                pthread_mutex_unlock(mutex)
                for job in leftovers { job.fail(with: SQLiteError.databaseClosed) }
                pthread_mutex_lock(mutex)
            }
        }
    }

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

    // MARK: - Hosted tasks

    /// Runs `run` (a Swift task's job) on the calling worker thread, whose
    /// connection is `database`: accesses that the task makes meanwhile run
    /// inline (see ``perform(_:)``).
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
    private func inlineConnection() -> Database? {
        // The count includes this thread's own increment if it hosts a task.
        guard hostedTaskCount.load(ordering: .relaxed) > 0 else { return nil }
        let thread = pthread_self()
        return locked {
            guard head == jobs.count, !isClosed else { return nil }
            return hostedTasks.first { pthread_equal($0.thread, thread) != 0 }?.database
        }
    }

    // MARK: - Claims

    /// The sleeping worker's connection, now reserved for the calling
    /// thread, when no job waits and no claim is running; `nil` otherwise.
    private func claimIdleConnection() -> Database? {
        locked {
            guard !isClaimed, !isClosed, head == jobs.count, sleepingWorkers > 0, let offeredDatabase,
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
            return sleepingWorkers > 0 && (head != jobs.count || isClosed)
        }
        if wake { pthread_cond_broadcast(condition) }
    }

    /// Runs `body` on the calling thread with the claimed `database`, then
    /// ends the claim, and queues the checkpoint that a commit left due.
    private func runClaimed<T>(on database: Database, _ body: (Database) throws -> T) async throws -> T {
        claimedAccesses.add(1, ordering: .relaxed)
        database.callerThreadAccess.isRunning = true
        defer {
            database.callerThreadAccess.isRunning = false
            let checkpointIsDue = database.callerThreadAccess.checkpointIsDue
            releaseClaim()
            if checkpointIsDue, push(CheckpointJob()) { deferredCheckpoints.add(1, ordering: .relaxed) }
        }
        return try await runCancellably(on: database, body)
    }

    /// Runs `body` on the calling thread, whose connection `database` is for
    /// now; cancelling the task interrupts it.
    private func runCancellably<T>(on database: Database, _ body: (Database) throws -> T) async throws -> T {
        let access = AccessCancellation()
        return try await withTaskCancellationHandler {
            try access.run(on: database, body)
        } onCancel: {
            access.cancel()
        }
    }

    // MARK: - Performing

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
            inlineAccesses.add(1, ordering: .relaxed)
            return try await runCancellably(on: database, body)
        }
        if claimingIdleConnection && allowsClaims, let database = claimIdleConnection() {
            do {
                return try await runClaimed(on: database, body)
            } catch is Database.LockWaitRefused {
                // Another connection holds the lock: wait for it on the connection's thread.
                lockWaitFallbacks.add(1, ordering: .relaxed)
            }
        }
        let job = BodyJob(body)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard job.start(continuation) else { return }
                if !push(job) { job.fail(with: SQLiteError.databaseClosed) }
            }
        } onCancel: {
            job.cancel()
        }
    }
}

/// Set when the task that waits for a job is cancelled; the connection
/// checks it before each step, since `sqlite3_interrupt` only stops a
/// statement that is already running.
final class CancellationFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .relaxed) }

    func set() { value.store(true, ordering: .relaxed) }
}

/// The cancellation of one database access: cancelling before it runs
/// skips it, cancelling while it runs interrupts its statement. Not
/// generic, so that an inline access costs no generic type instantiation.
final class AccessCancellation: Sendable {
    private struct State {
        var isCancelled = false
        var running: InterruptHandle?
    }

    private let state = Locked(State())
    /// Set by ``cancel()``; read by the connection's lock waits and steps.
    let flag = CancellationFlag()

    var isCancelled: Bool { state.withLock { $0.isCancelled } }

    func cancel() {
        flag.set()
        state.withLock { state in
            state.isCancelled = true
            state.running?.interrupt()
        }
    }

    /// Runs `body` on the calling thread, whose connection is `database`,
    /// unless cancelled first; an interruption caused by cancelling throws
    /// `CancellationError`.
    func run<T>(on database: Database, _ body: (Database) throws -> T) throws -> T {
        let proceed = state.withLock { state in
            guard !state.isCancelled else { return false }
            state.running = database.interruptHandle
            return true
        }
        guard proceed else { throw CancellationError() }
        database.cancellation = flag
        defer {
            database.cancellation = nil
            state.withLock { $0.running = nil }
        }
        do {
            return try body(database)
        } catch {
            throw error.reportingCancellation(isCancelled)
        }
    }
}

extension Error {
    /// `CancellationError` when this is how a cancelled access ends (its
    /// statement interrupted, or its wait for a lock cut short) and it was
    /// cancelled; the error itself otherwise.
    func reportingCancellation(_ cancelled: Bool) -> any Error {
        cancelled && (ResultCode.interrupt ~= self || ResultCode.busy ~= self) ? CancellationError() : self
    }
}

/// A job that runs a closure and resumes a continuation with its result.
final class BodyJob<T: Sendable>: ConnectionJob {
    private let body: @Sendable (Database) throws -> T
    private let continuation = Locked<CheckedContinuation<T, any Error>?>(nil)
    private let access = AccessCancellation()

    init(_ body: @escaping @Sendable (Database) throws -> T) {
        self.body = body
    }

    /// Stores the continuation. Returns `false` (after resuming it with
    /// `CancellationError`) when the task was already cancelled.
    func start(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        if access.isCancelled {
            continuation.resume(throwing: CancellationError())
            return false
        }
        self.continuation.withLock { $0 = continuation }
        return true
    }

    func cancel() {
        access.cancel()
    }

    var cancellation: CancellationFlag? { access.flag }

    func run(on database: Database) {
        let waiting = continuation.withLock { $0 != nil }
        guard waiting else { return }
        resume(with: Result { try access.run(on: database, body) })
    }

    func fail(with error: any Error) {
        resume(with: .failure(error))
    }

    private func resume(with result: Result<T, any Error>) {
        let continuation = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        continuation?.resume(with: result)
    }
}
