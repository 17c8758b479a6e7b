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
final class CommitGate: @unchecked Sendable {  // its counters are touched only with `mutex` held
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Commits that entered and did not leave: at most one (one writer).
    private var inFlight = 0
    /// Readers blocked in ``waitUntilClear()`` or ``holdingWriters(_:)``,
    /// and writers blocked in ``enter()``.
    private var waiters = 0
    /// Readers taking their snapshots: writers wait at the gate.
    private var holders = 0
    /// Writers that entered while readers held the gate (they waited
    /// ``writerWait`` in vain): a snapshot taken meanwhile may hold their
    /// commits, so its reader takes another.
    private var entriesWhileHeld = 0

    /// The longest a writer waits for readers taking their snapshots (a
    /// snapshot takes microseconds).
    private static let writerWait = 100_000_000
    /// The longest a reader waits for a commit to be published (`COMMIT`
    /// with its checkpoint, then the numbering) in ``waitUntilClear()``.
    private static let readerWait = 100_000_000
    /// The same, for a reader that holds writers: nothing else comes in
    /// meanwhile, so it waits for the commit in flight to be published.
    private static let holderWait = 10_000_000_000

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
        if holders > 0 {
            wait(while: { $0.holders > 0 }, nanoseconds: Self.writerWait)
            if holders > 0 { entriesWhileHeld += 1 }
        }
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
        if inFlight > 0 { wait(while: { $0.inFlight > 0 }, nanoseconds: Self.readerWait) }
    }

    /// Runs `body` (a reader taking its snapshot and reading the serial)
    /// while writers wait at the gate, once the commit in flight, if any,
    /// is published: what the snapshot holds is exactly what is
    /// published. Returns `nil` when that could not be ensured: the commit
    /// in flight took longer than 10 s, or a writer stopped waiting (after
    /// 100 ms: a reader whose snapshot waits for a lock) and came in. The
    /// reader then takes another snapshot.
    func holdingWriters<T>(_ body: () throws -> T) rethrows -> T? {
        pthread_mutex_lock(mutex)
        holders += 1  // first: no writer enters while the one in flight leaves
        let entries = entriesWhileHeld
        if inFlight > 0 { wait(while: { $0.inFlight > 0 }, nanoseconds: Self.holderWait) }
        let wasClear = inFlight == 0
        pthread_mutex_unlock(mutex)
        defer {
            let wake = locked {
                holders -= 1
                return waiters > 0
            }
            if wake { pthread_cond_broadcast(condition) }
        }
        let result = try body()
        let isExact = locked { wasClear && entriesWhileHeld == entries }
        return isExact ? result : nil
    }

    /// Waits, with `mutex` held, while `condition` holds, at most
    /// `nanoseconds`.
    private func wait(while condition: (CommitGate) -> Bool, nanoseconds: Int) {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec += nanoseconds % 1_000_000_000
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
