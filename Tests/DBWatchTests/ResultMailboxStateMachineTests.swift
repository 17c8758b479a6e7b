import Testing

@testable import DBWatch

/// The mailbox's states and transitions alone, without threads: the
/// waiter is a plain number standing for a suspended consumer.
@Suite("Mailbox state machine")
struct ResultMailboxStateMachineTests {
    typealias Machine = ResultMailboxStateMachine<Int, Int>
    struct Failure: Error {}

    /// The value a `resume` action carries: `.some(nil)` is the end, -1 an
    /// error, -2 a position alone (an unchanged fetch).
    func resumed(_ action: Machine.NextAction) -> Int?? {
        guard case .resume(let delivered) = action else { return .none }
        return .some(delivered.map { $0.result.map { (try? $0.get()) ?? -1 } ?? -2 })
    }

    /// The position a `resume` action carries.
    func position(_ action: Machine.NextAction) -> UInt64? {
        guard case .resume(let delivered?) = action else { return nil }
        return delivered.position
    }

    @Test func theLatestWins() {
        var machine = Machine()
        #expect(!machine.hasReceived)
        #expect(isNone(machine.hand(.success(1), at: 0, ending: false)))
        #expect(isNone(machine.hand(.success(2), at: 0, ending: false)))
        #expect(machine.hasReceived)
        #expect(resumed(machine.next(7)) == .some(2))
        // Nothing waits: the consumer suspends, and the next result resumes it.
        #expect(resumed(machine.next(8)) == .none)
        guard case .resume(let waiter, let result) = machine.hand(.success(3), at: 0, ending: false) else {
            Issue.record("the suspended consumer is not resumed")
            return
        }
        #expect(waiter == 8)
        #expect((try? result?.result?.get()) == 3)
    }

    @Test func endingDeliversWhatWaitsThenTheEnd() {
        var machine = Machine()
        _ = machine.hand(.success(1), at: 0, ending: false)
        _ = machine.hand(.failure(Failure()), at: 0, ending: true)
        // A value not taken yet, then the final error, then the end.
        #expect(resumed(machine.next(1)) == .some(1))
        #expect(resumed(machine.next(1)) == .some(-1))
        #expect(resumed(machine.next(1)) == .some(nil))
        // Nothing is accepted after the end.
        #expect(isNone(machine.hand(.success(5), at: 0, ending: false)))
        #expect(resumed(machine.next(1)) == .some(nil))
    }

    @Test func aFinalErrorReplacesAWaitingError() {
        var machine = Machine()
        _ = machine.hand(.failure(Failure()), at: 0, ending: false)
        _ = machine.hand(.failure(Failure()), at: 0, ending: true)
        #expect(resumed(machine.next(1)) == .some(-1))
        #expect(resumed(machine.next(1)) == .some(nil))
    }

    @Test func endingWithoutALastResult() {
        var machine = Machine()
        _ = machine.hand(.success(1), at: 0, ending: false)
        _ = machine.hand(nil, at: 0, ending: true)
        #expect(resumed(machine.next(1)) == .some(1))
        #expect(resumed(machine.next(1)) == .some(nil))

        // A suspended consumer is resumed with the end at once.
        var suspended = Machine()
        #expect(resumed(suspended.next(4)) == .none)
        guard case .resume(4, let result) = suspended.hand(nil, at: 0, ending: true) else {
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
        #expect(isNone(machine.hand(.success(1), at: 0, ending: false)))
        #expect(resumed(machine.next(4)) == .some(nil))
    }

    @Test func finishingDropsWhatWaits() {
        var machine = Machine()
        _ = machine.hand(.success(1), at: 0, ending: false)
        let action = machine.finish()
        #expect(action.waiter == nil && action.isFirst)
        #expect(resumed(machine.next(1)) == .some(nil))
    }

    @Test func hasReceivedCountsResultsNotTheEnd() {
        var machine = Machine()
        #expect(resumed(machine.next(1)) == .none)
        _ = machine.hand(.success(1), at: 0, ending: false)
        #expect(machine.hasReceived)
        var untouched = Machine()
        #expect(resumed(untouched.next(1)) == .none)
        #expect(!untouched.hasReceived)
    }

    func isNone(_ action: Machine.HandAction) -> Bool {
        if case .none = action { true } else { false }
    }

    // MARK: - Positions

    @Test func anUnchangedFetchMovesTheWaitingResultForwardInsteadOfReplacingIt() {
        var machine = Machine()
        _ = machine.hand(.success(1), at: 10, ending: false)
        #expect(isNone(machine.noteUnchanged(at: 12)))
        let next = machine.next(1)
        #expect(resumed(next) == .some(1))
        #expect(position(next) == 12)
    }

    @Test func anUnchangedFetchWithNothingWaitingIsAPositionAlone() {
        var machine = Machine()
        _ = machine.hand(.success(1), at: 10, ending: false)
        _ = machine.next(1)
        // Queued while the consumer is busy…
        #expect(isNone(machine.noteUnchanged(at: 11)))
        let queued = machine.next(2)
        #expect(resumed(queued) == .some(-2))
        #expect(position(queued) == 11)
        // …or handed to the suspended consumer.
        #expect(resumed(machine.next(3)) == .none)
        guard case .resume(let waiter, let delivered) = machine.noteUnchanged(at: 14) else {
            Issue.record("the suspended consumer is not resumed")
            return
        }
        #expect(waiter == 3)
        #expect(delivered?.result == nil && delivered?.position == 14)
        // A result after a position alone replaces it.
        _ = machine.noteUnchanged(at: 15)
        _ = machine.hand(.success(2), at: 16, ending: false)
        let last = machine.next(4)
        #expect(resumed(last) == .some(2))
        #expect(position(last) == 16)
    }

    @Test func anUnchangedFetchAfterTheEndIsIgnored() {
        var machine = Machine()
        _ = machine.hand(.success(1), at: 3, ending: true)
        #expect(isNone(machine.noteUnchanged(at: 4)))
        let next = machine.next(1)
        #expect(resumed(next) == .some(1))
        #expect(position(next) == 3)
        #expect(resumed(machine.next(1)) == .some(nil))
    }
}
