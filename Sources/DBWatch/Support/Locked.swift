#if canImport(Glibc)
    import Glibc
#endif

/// A value guarded by a `pthread_mutex_t`: decide inside `withLock`, act
/// (resume continuations, call callbacks) outside it.
///
/// Used instead of `Synchronization.Mutex`, which on Linux waits on raw
/// futexes that the thread sanitizer cannot see, so every access it guards
/// is reported as a race.
///
/// ```swift
/// let counter = Locked(0)
/// counter.withLock { $0 += 1 }
/// ```
final class Locked<State>: @unchecked Sendable {  // `state` is only touched with `mutex` held
    private var state: State
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init(_ state: State) {
        self.state = state
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    @inline(__always)
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
