import Dispatch
import Synchronization

/// A test step that did not finish in time.
struct TimeoutError: Error, CustomStringConvertible {
    let seconds: Double
    var description: String { "timed out after \(seconds) s" }
}

/// Runs `body` and fails with ``TimeoutError`` if it has not finished after
/// `seconds` (generous: CI runs on two busy cores), without waiting for a
/// stuck body (cancelled and left behind).
func withTimeout<T: Sendable>(
    seconds: Double = 90, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let slot = Mutex<CheckedContinuation<T, any Error>?>(nil)
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
