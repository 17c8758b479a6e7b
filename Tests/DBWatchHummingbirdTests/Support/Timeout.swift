import Dispatch
import DBWatch

/// A test step that did not finish in time.
struct TimeoutError: Error, CustomStringConvertible {
    let seconds: Double
    var description: String { "timed out after \(seconds) s" }
}

/// How long a test step may take before it counts as hung: generous, as CI
/// runs everything in parallel on two cores, also under the thread sanitizer.
let defaultTestTimeout: Double = 60

/// Runs `body` and fails with ``TimeoutError`` if it has not finished after
/// `seconds`, without waiting for a stuck body (cancelled and left behind).
func withTimeout<T: Sendable>(
    seconds: Double = defaultTestTimeout, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let slot = Locked<CheckedContinuation<T, any Error>?>(nil)
    let take: @Sendable () -> CheckedContinuation<T, any Error>? = {
        slot.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
    }
    return try await withCheckedThrowingContinuation { continuation in
        slot.withLock { $0 = continuation }
        let task = Task {
            do {
                let value = try await body()
                take()?.resume(returning: value)
            } catch {
                take()?.resume(throwing: error)
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            if let continuation = take() {
                task.cancel()
                continuation.resume(throwing: TimeoutError(seconds: seconds))
            }
        }
    }
}

/// Waits until `condition` holds, polling with short sleeps (the condition
/// is a counter of another task, not an ordering of this test's steps).
func waitUntil(seconds: Double = defaultTestTimeout, _ condition: @escaping @Sendable () -> Bool) async throws {
    try await withTimeout(seconds: seconds) {
        while !condition() {
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
