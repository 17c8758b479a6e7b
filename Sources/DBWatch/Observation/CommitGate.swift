#if canImport(Glibc)
    import Glibc
#endif

/// Tells a reader whether the snapshot it just took holds exactly the
/// commits published so far: the ground of a fetched value's position.
///
/// A commit of this process's writer becomes visible to readers inside
/// `COMMIT`, and is published (numbered by ``ObservationCenter/didCommit(_:)``)
/// only once that statement has finished. In between, a reader could take
/// a snapshot holding a commit whose number it cannot know yet. The writer
/// therefore enters the gate when SQLite's commit hook fires, before the
/// commit is visible, and leaves it once the commit is published or failed.
/// A reader reads the serial, takes its snapshot, and keeps it only if no
/// commit was in the gate meanwhile and the serial did not move
/// (``FetchBatch``); otherwise it ends the snapshot, waits until the gate
/// is clear, and takes another.
///
/// A writer that commits without pause may leave a reader no moment
/// between two commits: after a few raced snapshots the reader takes one
/// while holding writers at the gate (``holdingWriters(_:)``), for the
/// instant it takes.
///
/// Another process's commits do not pass the gate: they are numbered when
/// this process detects them (`Tracking/ExternalChangeMonitor.swift`), and
/// a snapshot may hold one before its number is published.
final class CommitGate: @unchecked Sendable {  // `inFlight`, `waiters` and `isHeld` are touched only with `mutex` held
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Commits that entered and did not leave: at most one (one writer).
    private var inFlight = 0
    /// Readers blocked in ``waitUntilClear()`` or ``holdingWriters(_:)``,
    /// and writers blocked in ``enter()``.
    private var waiters = 0
    /// A reader takes its snapshot: writers wait at the gate.
    private var isHeld = false

    /// The longest a reader or a writer waits for the other: a bound, not
    /// a pace (a snapshot takes microseconds; so does publishing a commit).
    private static let longestWait: Int = 100_000_000

    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
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

    /// The writer's commit is about to become visible (the commit hook).
    /// Waits while a reader holds writers (``holdingWriters(_:)``).
    func enter() {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if isHeld { wait(while: { $0.isHeld }) }
        inFlight += 1
    }

    /// The writer's commit was published, or failed: readers may trust
    /// their snapshots again.
    func leave() {
        let wake = locked {
            inFlight = max(0, inFlight - 1)
            return inFlight == 0 && waiters > 0
        }
        if wake { pthread_cond_broadcast(condition) }
    }

    /// Whether no commit is between becoming visible and being published.
    var isClear: Bool { locked { inFlight == 0 } }

    /// Blocks until no commit is in the gate, or 100 ms have passed (a
    /// reader then simply tries again).
    func waitUntilClear() {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if inFlight > 0 { wait(while: { $0.inFlight > 0 }) }
    }

    /// Runs `body` (a reader taking its snapshot and reading the serial)
    /// once no commit is in the gate, while writers wait at the gate: what
    /// the snapshot holds is exactly what is published. Either side waits
    /// at most 100 ms for the other (a writer descheduled in the gate, a
    /// reader whose snapshot waits for a lock), then goes on: a bound that
    /// keeps them from waiting on each other forever.
    func holdingWriters<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        if inFlight > 0 { wait(while: { $0.inFlight > 0 }) }
        isHeld = true
        pthread_mutex_unlock(mutex)
        defer {
            let wake = locked {
                isHeld = false
                return waiters > 0
            }
            if wake { pthread_cond_broadcast(condition) }
        }
        return try body()
    }

    /// Waits, with `mutex` held, while `condition` holds, at most
    /// ``longestWait``.
    private func wait(while condition: (CommitGate) -> Bool) {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline.tv_nsec += Self.longestWait
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        waiters += 1
        while condition(self) {
            if pthread_cond_timedwait(self.condition, mutex, &deadline) == ETIMEDOUT { break }
        }
        waiters -= 1
    }
}
