import Testing

@testable import DBWatch

/// The mailbox's states and transitions alone, without threads: the
/// waiter is a plain number standing for a suspended consumer.
@Suite("Mailbox state machine")
struct ResultMailboxStateMachineTests {
    typealias Machine = ResultMailboxStateMachine<Int, Int>
    struct Failure: Error {}

    /// The value a `resume` action carries: `.some(nil)` is the end.
    func resumed(_ action: Machine.NextAction) -> Int?? {
        guard case .resume(let result) = action else { return .none }
        return .some(result.map { (try? $0.get()) ?? -1 })
    }

    @Test func theLatestWins() {
        var machine = Machine()
        #expect(!machine.hasReceived)
        #expect(isNone(machine.hand(.success(1), ending: false)))
        #expect(isNone(machine.hand(.success(2), ending: false)))
        #expect(machine.hasReceived)
        #expect(resumed(machine.next(7)) == .some(2))
        // Nothing waits: the consumer suspends, and the next result resumes it.
        #expect(resumed(machine.next(8)) == .none)
        guard case .resume(let waiter, let result) = machine.hand(.success(3), ending: false) else {
            Issue.record("the suspended consumer is not resumed")
            return
        }
        #expect(waiter == 8)
        #expect((try? result?.get()) == 3)
    }

    @Test func endingDeliversWhatWaitsThenTheEnd() {
        var machine = Machine()
        _ = machine.hand(.success(1), ending: false)
        _ = machine.hand(.failure(Failure()), ending: true)
        // A value not taken yet, then the final error, then the end.
        #expect(resumed(machine.next(1)) == .some(1))
        #expect(resumed(machine.next(1)) == .some(-1))
        #expect(resumed(machine.next(1)) == .some(nil))
        // Nothing is accepted after the end.
        #expect(isNone(machine.hand(.success(5), ending: false)))
        #expect(resumed(machine.next(1)) == .some(nil))
    }

    @Test func aFinalErrorReplacesAWaitingError() {
        var machine = Machine()
        _ = machine.hand(.failure(Failure()), ending: false)
        _ = machine.hand(.failure(Failure()), ending: true)
        #expect(resumed(machine.next(1)) == .some(-1))
        #expect(resumed(machine.next(1)) == .some(nil))
    }

    @Test func endingWithoutALastResult() {
        var machine = Machine()
        _ = machine.hand(.success(1), ending: false)
        _ = machine.hand(nil, ending: true)
        #expect(resumed(machine.next(1)) == .some(1))
        #expect(resumed(machine.next(1)) == .some(nil))

        // A suspended consumer is resumed with the end at once.
        var suspended = Machine()
        #expect(resumed(suspended.next(4)) == .none)
        guard case .resume(4, let result) = suspended.hand(nil, ending: true) else {
            Issue.record("the suspended consumer is not resumed")
            return
        }
        #expect(result == nil)
        #expect(resumed(suspended.next(5)) == .some(nil))
    }

    @Test func finishingResumesTheWaiterAndTellsTheOwnerOnce() {
        var machine = Machine()
        #expect(resumed(machine.next(3)) == .none)
        let first = machine.finish()
        #expect(first.waiter == 3 && first.isFirst)
        let second = machine.finish()
        #expect(second.waiter == nil && !second.isFirst)
        // Dropped: what is handed in afterwards.
        #expect(isNone(machine.hand(.success(1), ending: false)))
        #expect(resumed(machine.next(4)) == .some(nil))
    }

    @Test func finishingDropsWhatWaits() {
        var machine = Machine()
        _ = machine.hand(.success(1), ending: false)
        let action = machine.finish()
        #expect(action.waiter == nil && action.isFirst)
        #expect(resumed(machine.next(1)) == .some(nil))
    }

    @Test func hasReceivedCountsResultsNotTheEnd() {
        var machine = Machine()
        #expect(resumed(machine.next(1)) == .none)
        _ = machine.hand(.success(1), ending: false)
        #expect(machine.hasReceived)
        var untouched = Machine()
        #expect(resumed(untouched.next(1)) == .none)
        #expect(!untouched.hasReceived)
    }

    func isNone(_ action: Machine.HandAction) -> Bool {
        if case .none = action { true } else { false }
    }
}
