import Dispatch
import Foundation
@testable import DBWatch

/// A test step that did not finish in time.
struct TimeoutError: Error, CustomStringConvertible {
    let seconds: Double
    var description: String { "timed out after \(seconds) s" }
}

/// How long a test step may take before it counts as hung. Generous: CI
/// machines run the whole suite in parallel on two cores and have been
/// measured six times slower than a developer machine, so a step that
/// waits for hundreds of thread hops needs room.
let defaultTestTimeout: Double = 60

/// Runs `body` and fails with ``TimeoutError`` if it has not finished after
/// `seconds`, without waiting for a stuck body (which is cancelled and left
/// behind), so a hang fails the test instead of CI.
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
