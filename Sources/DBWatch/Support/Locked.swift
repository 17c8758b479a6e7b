#if canImport(Glibc)
    import Glibc
#endif

/// A value guarded by a `pthread_mutex_t`: decide inside `withLock`, act
/// (resume continuations, call callbacks) outside it.
///
/// Used instead of `Synchronization.Mutex`, which on Linux waits on raw
/// futexes that the thread sanitizer cannot see, so every access it guards
/// is reported as a race. The state and the mutex live in one allocation,
/// shared by the copies of this value. Package-wide: the `dbwatch` tool
/// uses it for the same reason.
///
/// ```swift
/// let counter = Locked(0)
/// counter.withLock { $0 += 1 }
/// ```
package struct Locked<State>: @unchecked Sendable {  // the state is only touched with the mutex held
    private let storage: Storage

    private final class Storage: ManagedBuffer<State, pthread_mutex_t> {
        deinit {
            _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
        }
    }

    package init(_ state: State) {
        let buffer = Storage.create(minimumCapacity: 1) { _ in state }
        storage = unsafeDowncast(buffer, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { _ = pthread_mutex_init($0, nil) }
    }

    /// Runs `body` with exclusive access to the state.
    @inline(__always)
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try storage.withUnsafeMutablePointers { state, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&state.pointee)
        }
    }
}
