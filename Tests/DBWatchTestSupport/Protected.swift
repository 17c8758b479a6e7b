import Foundation

/// A value guarded by an `NSLock`, for the test helpers' threads.
///
/// `Synchronization.Mutex` waits on raw futexes on Linux, which the thread
/// sanitizer cannot see (it reports every guarded access as a race); an
/// `NSLock` is a pthread mutex, which it sees.
///
/// ```swift
/// let lines = Protected([String]())
/// lines.withLock { $0.append("hello") }
/// ```
public final class Protected<State>: @unchecked Sendable {  // the state is only touched with the lock held
    private var state: State
    private let lock = NSLock()

    /// Guards `state`.
    public init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with exclusive access to the state.
    public func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
