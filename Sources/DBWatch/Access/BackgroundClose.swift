/// Runs a database's blocking `close()` on a thread of its own for the
/// callers of `close() async`, so that no cooperative thread waits for the
/// grace period: one thread for all the callers waiting at a time.
final class BackgroundClose: Sendable {
    private struct State {
        var isRunning = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    /// Runs `close` on a new thread named `name` unless one runs already,
    /// and returns once it has returned.
    func run(name: String, _ close: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.waiters.append(continuation)
                defer { state.isRunning = true }
                return !state.isRunning
            }
            guard start else { return }
            startNamedThread(name) { [self] in
                close()
                let waiters = state.withLock { state in
                    state.isRunning = false
                    defer { state.waiters = [] }
                    return state.waiters
                }
                for waiter in waiters { waiter.resume() }
            }
        }
    }
}
