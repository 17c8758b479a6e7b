import Dispatch

/// A test step that did not finish in time.
public struct TimeoutError: Error, CustomStringConvertible {
    /// The time the step had.
    public let seconds: Double

    /// A step that had `seconds`.
    public init(seconds: Double) { self.seconds = seconds }

    public var description: String { "timed out after \(seconds) s" }
}

/// How long a test step may take before it counts as hung. Generous: CI
/// machines run the whole suite in parallel on two cores, also under the
/// thread sanitizer, and have been measured six times slower than a
/// developer machine, so a step that waits for hundreds of thread hops
/// needs room. Three minutes under the thread sanitizer: there, the 527
/// tests starting at once on two cooperative threads (each connection's
/// thread started and joined under the sanitizer, the first dynamic casts
/// of the parsing tests scanning every conformance) kept every test but
/// the first few from running for 60 to 90 s, and the steps that were
/// waiting meanwhile timed out (seen in 3 of 3 full runs, with thread
/// dumps taken during the stall: no deadlock, only a queue).
public let defaultTestTimeout: Double = isThreadSanitized ? 180 : 60

/// Runs `body` and fails with ``TimeoutError`` if it has not finished after
/// `seconds`, without waiting for a stuck body (which is cancelled and left
/// behind), so a hang fails the test instead of CI.
public func withTimeout<T: Sendable>(
    seconds: Double = defaultTestTimeout, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let slot = Protected<CheckedContinuation<T, any Error>?>(nil)
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

/// Waits until `condition` holds, checking it every millisecond, and fails
/// with ``TimeoutError`` after `seconds`. For a state that other threads
/// change and that announces nothing (a counter, a flag of the library):
/// an ordering of the test's own steps waits on a ``Gate`` instead.
public func waitUntil(seconds: Double = defaultTestTimeout, _ condition: @escaping @Sendable () -> Bool) async throws {
    try await withTimeout(seconds: seconds) {
        while !condition() {
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
