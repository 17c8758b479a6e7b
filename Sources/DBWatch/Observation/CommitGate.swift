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
/// Another process's commits do not pass the gate: they are numbered when
/// this process detects them (`Tracking/ExternalChangeMonitor.swift`), and
/// a snapshot may hold one before its number is published.
final class CommitGate: @unchecked Sendable {  // `inFlight` and `waiters` are touched only with `mutex` held
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Commits that entered and did not leave: at most one (one writer).
    private var inFlight = 0
    /// Readers blocked in ``waitUntilClear()``.
    private var waiters = 0

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
    func enter() {
        locked { inFlight += 1 }
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
        guard inFlight > 0 else { return }
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline.tv_nsec += 100_000_000
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        waiters += 1
        while inFlight > 0 {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
        }
        waiters -= 1
    }
}
