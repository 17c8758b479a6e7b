import Testing

@testable import DBWatch

/// The driver's states and transitions alone, without threads, a database
/// or a clock: subscribers record what they are handed, timers are
/// numbers, and the rate limit's time is passed in.
@Suite("Observation driver state machine")
struct ObservationDriverStateMachineTests {
    /// A subscriber that records the values handed to it.
    final class Recorder: DriverSubscriber {
        var received: [Int] = []
        var isFinished = false
        /// The positions of unchanged fetches it was told of.
        var unchanged: [UInt64] = []
        /// The positions of the results it was handed.
        var positions: [UInt64] = []
        var reportsUnchanged = false
        var hasReceived: Bool { !received.isEmpty || isFinished }

        func offerWakingLater(_ result: Result<Int, any Error>, at position: UInt64) -> Int? {
            received.append((try? result.get()) ?? -1)
            positions.append(position)
            return received.count
        }

        func noteUnchangedWakingLater(at position: UInt64) -> Int? {
            unchanged.append(position)
            return 0
        }

        func finishWakingLater(after last: Result<Int, any Error>?, at position: UInt64) -> Int? {
            if let last { received.append((try? last.get()) ?? -1) }
            isFinished = true
            return 0
        }
    }

    typealias Machine = ObservationDriverStateMachine<Recorder, Int>
    static let interval = Duration.seconds(1)

    func isSame(_ result: Result<Int, any Error>, _ previous: Result<Int, any Error>?) -> Bool {
        switch (result, previous) {
        case (.success(let value), .success(let old)?): value == old
        case (.failure(let error), .failure(let old)?): String(describing: error) == String(describing: old)
        default: false
        }
    }

    func at(_ seconds: Double) -> Machine.RateLimitReading {
        Machine.RateLimitReading(now: .milliseconds(Int(seconds * 1000)), interval: Self.interval)
    }

    /// A machine whose first subscriber got `value` at `now` (rate limit
    /// given, or not), with nothing fetching.
    func started(with value: Int, subscriber: Recorder, rateLimit: Machine.RateLimitReading? = nil) -> Machine {
        var machine = Machine()
        #expect(machine.add(subscriber, startFetch: true)?.fetch == true)
        let done = machine.fetchDidFinish(
            .success(value), at: 0, missedCommit: false, isSlow: false, rateLimit: rateLimit, isSame: isSame)
        #expect(!done.fetch && done.startTimer == nil)
        return machine
    }

    // MARK: - Without a rate limit

    @Test func oneFetchInFlightAndAtMostOnePending() {
        let subscriber = Recorder()
        var machine = started(with: 1, subscriber: subscriber)
        #expect(subscriber.received == [1])
        #expect(machine.commitDidTouchRegion(rateLimit: nil).fetch)
        // Two commits during the fetch: one more fetch, not two.
        #expect(!machine.commitDidTouchRegion(rateLimit: nil).fetch)
        #expect(!machine.commitDidTouchRegion(rateLimit: nil).fetch)
        let first = machine.fetchDidFinish(
            .success(2), at: 0, missedCommit: false, isSlow: false, rateLimit: nil, isSame: isSame)
        #expect(first.fetch)
        let second = machine.fetchDidFinish(
            .success(3), at: 0, missedCommit: false, isSlow: false, rateLimit: nil, isSame: isSame)
        #expect(!second.fetch)
        #expect(subscriber.received == [1, 2, 3])
        #expect(machine.statistics.fetches == 3)
        #expect(machine.statistics.changesNotified == 3)
    }

    @Test func anEqualResultIsNotDeliveredAgain() {
        let subscriber = Recorder()
        var machine = started(with: 1, subscriber: subscriber)
        _ = machine.commitDidTouchRegion(rateLimit: nil)
        let action = machine.fetchDidFinish(
            .success(1), at: 0, missedCommit: false, isSlow: false, rateLimit: nil, isSame: isSame)
        #expect(action.wakeups.isEmpty && action.replaced == nil)
        #expect(subscriber.received == [1])
    }

    @Test func aFetchThatMissedACommitFetchesAgain() {
        let subscriber = Recorder()
        var machine = started(with: 1, subscriber: subscriber)
        _ = machine.commitDidTouchRegion(rateLimit: nil)
        let action = machine.fetchDidFinish(
            .success(2), at: 0, missedCommit: true, isSlow: false, rateLimit: nil, isSame: isSame)
        #expect(action.fetch)
    }

    @Test func aLateSubscriberGetsTheCurrentValueAtOnceOrTheFetchInFlight() {
        let first = Recorder()
        var machine = started(with: 1, subscriber: first)
        let late = Recorder()
        let action = machine.add(late, startFetch: false)
        #expect(action?.fetch == false && action?.wakeups.count == 1)
        #expect(late.received == [1])

        // During a fetch, it waits for that fetch's result, which every
        // subscriber that lacks it receives.
        _ = machine.commitDidTouchRegion(rateLimit: nil)
        let later = Recorder()
        #expect(machine.add(later, startFetch: false)?.wakeups.isEmpty == true)
        _ = machine.fetchDidFinish(
            .success(1), at: 0, missedCommit: false, isSlow: false, rateLimit: nil, isSame: isSame)
        #expect(later.received == [1])
        #expect(first.received == [1] && late.received == [1])
    }

    @Test func theLastSubscriberLeavingStopsAndCancels() {
        let subscriber = Recorder()
        var machine = Machine()
        _ = machine.add(subscriber, startFetch: true)
        let cancellation = AccessCancellation()
        let runs = machine.fetchWillRun(cancellation)
        #expect(runs)
        let (removed, action) = machine.remove(ObjectIdentifier(subscriber))
        #expect(removed && action.stopped && action.cancelFetch === cancellation)
        #expect(machine.isStopped)
        // A stopped driver refuses subscribers, fetches and commits.
        #expect(machine.add(Recorder(), startFetch: false) == nil)
        let runsWhenStopped = machine.fetchWillRun(AccessCancellation())
        #expect(!runsWhenStopped)
        #expect(!machine.commitDidTouchRegion(rateLimit: nil).fetch)
        #expect(!machine.remove(ObjectIdentifier(subscriber)).action.stopped)
    }

    @Test func closingEndsEverySubscriberWithTheError() {
        let subscriber = Recorder()
        var machine = started(with: 1, subscriber: subscriber)
        _ = machine.commitDidTouchRegion(rateLimit: nil)
        let action = machine.close(isSame: isSame)
        #expect(action.wakeups.count == 1)
        #expect(subscriber.received == [1, -1] && subscriber.isFinished)
        // The fetch in flight ends into nothing; a later subscriber ends at once.
        let done = machine.fetchDidFinish(
            .success(2), at: 0, missedCommit: false, isSlow: false, rateLimit: nil, isSame: isSame)
        #expect(done.wakeups.isEmpty && !done.fetch)
        let late = Recorder()
        #expect(machine.add(late, startFetch: false) != nil)
        #expect(late.isFinished)
        #expect(machine.close(isSame: isSame).wakeups.isEmpty)
    }

    @Test func twoSlowFetchesInARowFetchAlone() {
        var machine = started(with: 1, subscriber: Recorder())
        for (isSlow, alone) in [(true, false), (true, true), (false, false)] {
            _ = machine.commitDidTouchRegion(rateLimit: nil)
            _ = machine.fetchDidFinish(
                .success(1), at: 0, missedCommit: false, isSlow: isSlow, rateLimit: nil, isSame: isSame)
            #expect(machine.fetchesAlone == alone)
        }
    }

    // MARK: - With a rate limit

    @Test func aChangeWithinTheIntervalWaitsForTheTimer() throws {
        let subscriber = Recorder()
        var machine = started(with: 1, subscriber: subscriber, rateLimit: at(0))
        let wait = machine.commitDidTouchRegion(rateLimit: at(0.2))
        #expect(!wait.fetch)
        let timer = try #require(wait.startTimer)
        #expect(timer.until == .seconds(1))
        #expect(machine.timerStarted(10, token: timer.token) == nil)
        // More commits meanwhile start nothing more.
        #expect(machine.commitDidTouchRegion(rateLimit: at(0.5)).startTimer == nil)
        #expect(machine.timerFired(timer.token).fetch)
        _ = machine.fetchDidFinish(
            .success(2), at: 0, missedCommit: false, isSlow: false, rateLimit: at(1), isSame: isSame)
        #expect(subscriber.received == [1, 2])
        // A stale timer does nothing.
        #expect(!machine.timerFired(timer.token).fetch)
        // After the interval, a change fetches at once.
        #expect(machine.commitDidTouchRegion(rateLimit: at(2.5)).fetch)
    }

    @Test func aNewcomerDuringTheWaitFetchesNowForItselfOnly() throws {
        let first = Recorder()
        var machine = started(with: 1, subscriber: first, rateLimit: at(0))
        let timer = try #require(machine.commitDidTouchRegion(rateLimit: at(0.1)).startTimer)
        _ = machine.timerStarted(10, token: timer.token)

        // The newcomer's first value is not delayed: the timer is
        // cancelled and a fetch starts now.
        let newcomer = Recorder()
        let joined = machine.add(newcomer, startFetch: false) ?? Machine.Action()
        #expect(joined.fetch && joined.cancelTimer == 10)
        let primed = machine.fetchDidFinish(
            .success(2), at: 0, missedCommit: false, isSlow: false, rateLimit: at(0.2), isSame: isSame)
        #expect(newcomer.received == [2])
        // The others still wait for the interval.
        #expect(first.received == [1])
        let again = try #require(primed.startTimer)
        #expect(again.until == .seconds(1) && !primed.fetch)
        _ = machine.timerStarted(11, token: again.token)

        // A second newcomer gets that result at once: no commit outdated it.
        let second = Recorder()
        let joinedAtOnce = machine.add(second, startFetch: false) ?? Machine.Action()
        #expect(!joinedAtOnce.fetch && joinedAtOnce.cancelTimer == nil)
        #expect(second.received == [2])

        // At the interval, everyone gets the value, the newcomers only if
        // it differs from what they got.
        #expect(machine.timerFired(again.token).fetch)
        _ = machine.fetchDidFinish(
            .success(2), at: 0, missedCommit: false, isSlow: false, rateLimit: at(1), isSame: isSame)
        #expect(first.received == [1, 2])
        #expect(newcomer.received == [2] && second.received == [2])
        _ = machine.commitDidTouchRegion(rateLimit: at(2.1))
        _ = machine.fetchDidFinish(
            .success(3), at: 0, missedCommit: false, isSlow: false, rateLimit: at(2.1), isSame: isSame)
        #expect(first.received == [1, 2, 3] && newcomer.received == [2, 3] && second.received == [2, 3])
    }

    @Test func aCommitAfterTheNewcomersFetchOutdatesItsResult() throws {
        let first = Recorder()
        var machine = started(with: 1, subscriber: first, rateLimit: at(0))
        let timer = try #require(machine.commitDidTouchRegion(rateLimit: at(0.1)).startTimer)
        _ = machine.timerStarted(10, token: timer.token)
        let newcomer = Recorder()
        _ = machine.add(newcomer, startFetch: false)
        _ = machine.fetchDidFinish(
            .success(2), at: 0, missedCommit: false, isSlow: false, rateLimit: at(0.2), isSame: isSame)
        // A commit: the next newcomer fetches anew.
        _ = machine.commitDidTouchRegion(rateLimit: at(0.3))
        let second = Recorder()
        let joined = machine.add(second, startFetch: false) ?? Machine.Action()
        #expect(joined.fetch && second.received.isEmpty)
        _ = machine.fetchDidFinish(
            .success(3), at: 0, missedCommit: false, isSlow: false, rateLimit: at(0.4), isSame: isSame)
        // Only the subscriber that had nothing gets it: the first newcomer
        // waits with the others, in order.
        #expect(second.received == [3] && newcomer.received == [2] && first.received == [1])
    }

    @Test func aNewcomersFetchEndingAfterTheIntervalServesEveryone() throws {
        let first = Recorder()
        var machine = started(with: 1, subscriber: first, rateLimit: at(0))
        let timer = try #require(machine.commitDidTouchRegion(rateLimit: at(0.9)).startTimer)
        _ = machine.timerStarted(10, token: timer.token)
        let newcomer = Recorder()
        _ = machine.add(newcomer, startFetch: false)
        let done = machine.fetchDidFinish(
            .success(2), at: 0, missedCommit: false, isSlow: false, rateLimit: at(1.1), isSame: isSame)
        #expect(done.startTimer == nil && !done.fetch)
        #expect(first.received == [1, 2] && newcomer.received == [2])
        // The timer of the old wait (cancelled) does nothing if it fires anyway.
        #expect(!machine.timerFired(timer.token).fetch)
    }

    @Test func aTimerCreatedAfterItsWaitEndedIsCancelled() throws {
        var machine = started(with: 1, subscriber: Recorder(), rateLimit: at(0))
        let timer = try #require(machine.commitDidTouchRegion(rateLimit: at(0.1)).startTimer)
        // A newcomer's fetch replaced the wait before the timer was stored.
        _ = machine.add(Recorder(), startFetch: false)
        #expect(machine.timerStarted(10, token: timer.token) == 10)
    }

    @Test func theLastSubscriberLeavingDuringTheWaitCancelsTheTimer() throws {
        let subscriber = Recorder()
        var machine = started(with: 1, subscriber: subscriber, rateLimit: at(0))
        let timer = try #require(machine.commitDidTouchRegion(rateLimit: at(0.1)).startTimer)
        _ = machine.timerStarted(10, token: timer.token)
        let (_, action) = machine.remove(ObjectIdentifier(subscriber))
        #expect(action.stopped && action.cancelTimer == 10)
        #expect(!machine.timerFired(timer.token).fetch)
    }

    // MARK: - Positions

    @Test func resultsCarryTheirFetchPositionAndAnUnchangedFetchIsReportedToThoseWhoAsk() {
        let reporting = Recorder()
        reporting.reportsUnchanged = true
        let plain = Recorder()
        var machine = Machine()
        _ = machine.add(reporting, startFetch: true)
        _ = machine.add(plain, startFetch: false)
        _ = machine.fetchDidFinish(
            .success(1), at: 4, missedCommit: false, isSlow: false, rateLimit: nil, isSame: isSame)
        #expect(reporting.positions == [4] && plain.positions == [4])
        // A commit that leaves the value equal: only the reporting subscriber hears of it.
        _ = machine.commitDidTouchRegion(rateLimit: nil)
        let unchanged = machine.fetchDidFinish(
            .success(1), at: 6, missedCommit: false, isSlow: false, rateLimit: nil, isSame: isSame)
        #expect(unchanged.wakeups.count == 1)
        #expect(reporting.unchanged == [6] && plain.unchanged.isEmpty)
        #expect(reporting.received == [1] && plain.received == [1])
        // A late subscriber gets the last result at the last fetch's position.
        let late = Recorder()
        _ = machine.add(late, startFetch: false)
        #expect(late.received == [1] && late.positions == [6])
        _ = machine.commitDidTouchRegion(rateLimit: nil)
        _ = machine.fetchDidFinish(
            .success(2), at: 9, missedCommit: false, isSlow: false, rateLimit: nil, isSame: isSame)
        #expect(reporting.positions == [4, 9] && late.positions == [6, 9])
        #expect(reporting.unchanged == [6])
    }
}
