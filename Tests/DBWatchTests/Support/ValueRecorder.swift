import DBWatchTestSupport
@testable import DBWatch

/// Collects what an observation delivers, and lets a test await a
/// condition on it (with a timeout) instead of sleeping.
final class ValueRecorder<Value: Sendable>: Sendable {
    private struct Waiter {
        let predicate: @Sendable ([Value]) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private let state = Protected<(values: [Value], waiters: [Waiter])>(([], []))

    var values: [Value] { state.withLock { $0.values } }

    func append(_ value: Value) {
        let ready = state.withLock { state -> [Waiter] in
            state.values.append(value)
            let values = state.values
            let ready = state.waiters.filter { $0.predicate(values) }
            state.waiters.removeAll { $0.predicate(values) }
            return ready
        }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Waits until `predicate` holds for the values received so far.
    func wait(seconds: Double = defaultTestTimeout, until predicate: @escaping @Sendable ([Value]) -> Bool) async throws
    {
        try await withTimeout(seconds: seconds) {
            await withCheckedContinuation { continuation in
                let now = self.state.withLock { state -> Bool in
                    if predicate(state.values) { return true }
                    state.waiters.append(Waiter(predicate: predicate, continuation: continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }

    /// Waits until at least `count` values arrived.
    func wait(forCount count: Int, seconds: Double = defaultTestTimeout) async throws {
        try await wait(seconds: seconds) { $0.count >= count }
    }
}

/// Consumes `observation.results` in a task, recording every element.
/// The returned task ends when cancelled.
func record<R: Queryable>(
    _ observation: QueryObservation<R>
) -> (ValueRecorder<Result<R.Value, any Error>>, Task<Void, Never>) {
    let recorder = ValueRecorder<Result<R.Value, any Error>>()
    let task = Task {
        for await result in observation.results { recorder.append(result) }
    }
    return (recorder, task)
}

extension Result {
    /// The success value, or `nil` for a failure.
    var value: Success? { try? get() }
}
