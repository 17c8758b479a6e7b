import Dispatch
import Foundation

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
/// dumps taken during the stall: no deadlock, only a queue). On a machine
/// busy with other work too, a step that times out gets up to four more
/// periods (see `MachineLoad`).
public let defaultTestTimeout: Double = isThreadSanitized ? 180 : 60

/// Runs `body` and fails with ``TimeoutError`` if it has not finished after
/// `seconds`, without waiting for a stuck body (which is cancelled and left
/// behind), so a hang fails the test instead of CI. Time that `body` spends
/// waiting its turn for a resource the tests share (a PostgreSQL server
/// slot, ``TestDeadline/excludingWait(_:)``) does not count.
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
    let deadline = TestDeadline(parent: TestDeadline.current)
    return try await withCheckedThrowingContinuation { continuation in
        slot.withLock { $0 = continuation }
        let task = Task {
            do {
                let value = try await TestDeadline.$current.withValue(deadline) { try await body() }
                take()?.resume(returning: value)
            } catch {
                take()?.resume(throwing: error)
            }
        }
        let loadExtensions = Protected(0)
        @Sendable func expire() {
            if let moreTime = deadline.takeExtension() {
                DispatchQueue.global().asyncAfter(deadline: .now() + moreTime, execute: expire)
            } else if MachineLoad.isOverloaded,
                loadExtensions.withLock({ count in
                    defer { count += 1 }
                    return count < MachineLoad.maximumExtensions
                })
            {
                // A loaded machine makes a step slower, not red; a step that
                // hangs still fails, later.
                DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: expire)
            } else if let continuation = take() {
                task.cancel()
                continuation.resume(throwing: TimeoutError(seconds: seconds))
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: expire)
    }
}

/// The deadline of a ``withTimeout(seconds:_:)`` step, which a wait for a
/// resource the tests share moves later by the time waited: a test queued
/// behind others for one of the few PostgreSQL servers a test process may
/// run is slow, not hung.
public final class TestDeadline: Sendable {
    /// The deadline of the innermost step of the current task.
    @TaskLocal public static var current: TestDeadline?

    private struct State {
        /// Waits that ended, not yet added to the deadline.
        var waited: Double = 0
        /// Waits in progress, by when they started.
        var waitingSince: [UInt64: DispatchTime] = [:]
        var nextWait: UInt64 = 0
    }

    private let parent: TestDeadline?
    private let state = Protected(State())

    init(parent: TestDeadline?) {
        self.parent = parent
    }

    /// Runs `body`, a wait for a shared resource, whose time the deadlines
    /// of the current step and of the steps around it do not count.
    public static func excludingWait<T>(_ body: () async throws -> T) async rethrows -> T {
        var deadlines: [TestDeadline] = []
        var deadline = current
        while let next = deadline {
            deadlines.append(next)
            deadline = next.parent
        }
        let waits = deadlines.map { $0.startWait() }
        defer { for (deadline, wait) in zip(deadlines, waits) { deadline.endWait(wait) } }
        return try await body()
    }

    private func startWait() -> UInt64 {
        state.withLock { state in
            state.nextWait += 1
            state.waitingSince[state.nextWait] = .now()
            return state.nextWait
        }
    }

    private func endWait(_ wait: UInt64) {
        state.withLock { state in
            guard let start = state.waitingSince.removeValue(forKey: wait) else { return }
            state.waited += Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        }
    }

    /// The time the deadline moves by now: the waits that ended since the
    /// last call, and at least a second while one is in progress; nil when
    /// the deadline has passed.
    func takeExtension() -> Double? {
        state.withLock { state in
            let now = DispatchTime.now()
            var moreTime = state.waited
            state.waited = 0
            for (wait, start) in state.waitingSince {
                moreTime += Double(now.uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
                state.waitingSince[wait] = now
            }
            if !state.waitingSince.isEmpty { moreTime = max(moreTime, 1) }
            return moreTime > 0.001 ? moreTime : nil
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

/// The machine's load, which stretches a step's timeout: on a machine whose
/// run queue holds more than twice as many threads as it has cores (other
/// builds and test runs), a step's time is mostly spent waiting for a core.
enum MachineLoad {
    /// How many more timeouts a step gets while the machine is overloaded.
    static let maximumExtensions = 4

    /// Whether the load average of the last minute exceeds twice the cores.
    static var isOverloaded: Bool {
        var averages = [Double](repeating: 0, count: 1)
        guard getloadavg(&averages, 1) == 1 else { return false }
        return averages[0] > 2 * Double(ProcessInfo.processInfo.activeProcessorCount)
    }
}
