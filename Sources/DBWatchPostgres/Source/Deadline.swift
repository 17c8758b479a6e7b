import DBWatch

/// Runs `operation` and waits for it at most `timeout`. When time is up,
/// `onTimeout` runs (it must make the operation end, for example by closing
/// its connection), and the call throws ``ReplicaError/Code/sourceUnreachable``
/// without waiting for the operation any longer.
///
/// A query on a connection that PostgreSQL dropped while shutting down was
/// seen to wait forever in postgres-nio; a peer that vanished without
/// closing its TCP connection does the same. Without a deadline, the
/// replica would wait there instead of retrying.
func withDeadline<T: Sendable>(
    _ timeout: Duration, onTimeout: @escaping @Sendable () -> Void,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let waiting = DeadlineState<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let cancelled = waiting.withLock { state in
                state.continuation = continuation
                return state.isCancelled
            }
            if cancelled {
                waiting.withLock { $0.take() }?.resume(throwing: CancellationError())
                return
            }
            let work = Task {
                do {
                    let value = try await operation()
                    waiting.withLock { $0.take() }?.resume(returning: value)
                } catch {
                    waiting.withLock { $0.take() }?.resume(throwing: error)
                }
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled, let continuation = waiting.withLock({ $0.take() }) else { return }
                onTimeout()
                work.cancel()
                continuation.resume(
                    throwing: ReplicaError(.sourceUnreachable, "PostgreSQL did not answer within \(timeout)"))
            }
            waiting.withLock { state in
                state.work = work
                state.timer = timer
            }
        }
    } onCancel: {
        let (continuation, work, timer) = waiting.withLock { state in
            state.isCancelled = true
            return (state.take(), state.work, state.timer)
        }
        work?.cancel()
        timer?.cancel()
        continuation?.resume(throwing: CancellationError())
    }
}

/// The state of one ``withDeadline(_:onTimeout:_:)`` call, shared by the
/// caller, the operation's task and the timer's.
private final class DeadlineState<T: Sendable>: Sendable {
    private let state = Locked(Waiting<T>())  // not `Mutex`, which the thread sanitizer cannot see on Linux

    func withLock<R>(_ body: (inout Waiting<T>) -> R) -> R {
        state.withLock { body(&$0) }
    }
}

/// What a ``DeadlineState`` holds.
private struct Waiting<T: Sendable> {
    var continuation: CheckedContinuation<T, any Error>?
    var work: Task<Void, Never>?
    var timer: Task<Void, Never>?
    var isCancelled = false

    /// The continuation, once: whoever takes it resumes it.
    mutating func take() -> CheckedContinuation<T, any Error>? {
        defer { continuation = nil }
        return continuation
    }
}
