import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// How a connection waits for another connection's lock: like SQLite's
/// busy timeout (``Configuration/busyTimeout``), but the wait ends as soon
/// as the access is cancelled (then it throws `CancellationError`), or the
/// grace period of a close ends (then it throws "database is closed"), or the
/// task that opens the connection is (then opening throws
/// `CancellationError` too), and a connection lent to a caller's thread does
/// not wait at all (see Database+CallerThread.swift).
extension Database {
    /// The sleeps between attempts, growing like SQLite's own, and short
    /// enough that a cancellation ends a wait within 25 ms.
    static let lockWaitSteps: [Duration] = [1, 2, 5, 10, 15, 20, 25].map { .milliseconds($0) }

    func installLockWaitHandler() {
        guard let handle else { return }
        sqlite3_busy_handler(handle, busyHandler, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Whether to try the lock again after the `attempt`-th failure (0 for
    /// the first), having slept meanwhile.
    ///
    /// Like SQLite's own busy timeout, the limit applies to the time spent
    /// sleeping during one `sqlite3_step` (SQLite numbers the attempts across
    /// all the waits of a step): the work a statement does between two waits
    /// (its RESERVED lock, then its commit's EXCLUSIVE one) does not count.
    fileprivate func retriesLock(afterAttempt attempt: Int32) -> Bool {
        guard lockWaits.isAllowed, !waitIsCancelled, !isShuttingDown else { return false }
        let limit = Duration.milliseconds(configuration.busyTimeoutMilliseconds)
        guard limit > .zero else { return false }
        if attempt == 0 {
            lockWaits.waitedInStep = .zero
            configuration.lockWaitWillStart?()
        }
        let remaining = limit - lockWaits.waitedInStep
        guard remaining > .zero else { return false }
        let step = Database.lockWaitSteps[min(Int(attempt), Database.lockWaitSteps.count - 1)]
        let (seconds, attoseconds) = min(step, remaining).components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var left = timespec()
        let clock = ContinuousClock()
        let start = clock.now
        while nanosleep(&request, &left) != 0 && errno == EINTR { request = left }
        lockWaits.waitedInStep += clock.now - start
        return !waitIsCancelled && !isShuttingDown
    }

    /// The connection's queue shut down at the end of a close's grace period.
    var isShuttingDown: Bool { shutdown?.isSet ?? false }

    /// The access is cancelled; outside an access (while opening), the task
    /// running on this thread is.
    var waitIsCancelled: Bool {
        if let cancellation { return cancellation.isSet }
        return withUnsafeCurrentTask { $0?.isCancelled ?? false }
    }
}

private func busyHandler(_ context: UnsafeMutableRawPointer?, _ attempt: Int32) -> Int32 {
    guard let context else { return 0 }
    return Unmanaged<Database>.fromOpaque(context).takeUnretainedValue().retriesLock(afterAttempt: attempt) ? 1 : 0
}
