/// A clock that moves only when a test calls `advance(by:)`.
public final class TestClock: Clock, Sendable {
    /// A moment of the clock: the time since it started.
    public struct Instant: InstantProtocol {
        /// The time since the clock's zero.
        public var offset: Duration
        /// The instant `duration` later.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The time from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Whether `lhs` comes first.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// A task waiting for `count` sleepers (``waitForSleepers(_:)``).
    private struct Watcher {
        let count: Int
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Int: Sleeper] = [:]
        var watchers: [Int: Watcher] = [:]
        var nextID = 0

        /// Takes the watchers that as many sleepers satisfy now.
        mutating func takeSatisfiedWatchers() -> [Watcher] {
            let satisfied = watchers.filter { $0.value.count <= sleepers.count }
            for id in satisfied.keys { watchers[id] = nil }
            return Array(satisfied.values)
        }
    }

    private let state = Protected(State())

    /// A clock at zero.
    public init() {}

    /// The time the tests have advanced the clock to.
    public var now: Instant { state.withLock { $0.now } }
    /// None: the clock moves only by ``advance(by:)``.
    public var minimumResolution: Duration { .zero }

    /// The number of tasks sleeping on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Sleeps until a test advances the clock to `deadline`; throws
    /// `CancellationError` when cancelled while asleep (a task cancelled
    /// before returns at once).
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, watchers) = state.withLock { state -> (Bool, [Watcher]) in
                    if deadline <= state.now || Task.isCancelled { return (true, []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (false, state.takeSatisfiedWatchers())
                }
                for watcher in watchers { watcher.continuation.resume() }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Waits until at least `count` tasks sleep on this clock (a task that
    /// reached its wait), or until the waiting task is cancelled.
    ///
    /// ```swift
    /// await clock.waitForSleepers()   // the client waits to reconnect
    /// clock.advance(by: .seconds(1))
    /// ```
    public func waitForSleepers(_ count: Int = 1) async {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.sleepers.count >= count || Task.isCancelled { return true }
                    state.watchers[id] = Watcher(count: count, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let watcher = state.withLock { $0.watchers.removeValue(forKey: id) }
            watcher?.continuation.resume()
        }
    }

    /// Moves time forward and wakes the sleepers whose deadline passed.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
