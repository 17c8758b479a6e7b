import Testing

@testable import DBWatchDelivery

/// Which positions a sync history knows a value at, for the catch-up's
/// complete answers: a fetched value is known where it was fetched, and
/// from the last fetch that found it unchanged up to the first commit
/// that touched its query; not in between (it may have changed and
/// changed back), nor after.
@Suite("Sync history")
struct SyncHistoryTests {
    /// Steps 10 → 20 (the value found again at 14, touched at 17) and
    /// 20 → 30; the current value at 30, found again at 35, touched at 40.
    func history() -> SyncHistory {
        var history = SyncHistory(limit: 1 << 20)
        history.append(SyncHistory.Step(from: 10, to: 20, known: 14, until: 17, changes: Array("{}".utf8)))
        history.append(SyncHistory.Step(from: 20, to: 30, known: 20, until: 21, changes: Array("{}".utf8)))
        return history
    }

    func knows(_ end: UInt64) -> Bool {
        history().between(0, end: end, current: 30, currentKnown: 35, currentUntil: 40) != nil
    }

    @Test func aValueIsKnownWhereItWasFetchedAndFromItsLastFetchToTheFirstChange() {
        #expect(knows(10))
        #expect(!knows(12), "between the fetch and the fetch that found it unchanged")
        #expect(knows(14) && knows(16))
        #expect(!knows(17) && !knows(19), "after the commit that touched it")
        #expect(knows(20) && !knows(25))
        #expect(knows(30))
        #expect(!knows(32), "the current value between its fetch and the last that found it")
        #expect(knows(35) && knows(39))
        #expect(!knows(40))
    }

    @Test func theStepsFromAPositionEndAtTheStepThatHoldsTheEnd() throws {
        guard case .steps(let steps)? = history().between(10, end: 20, current: 30, currentKnown: 35, currentUntil: 40)
        else {
            Issue.record("no steps")
            return
        }
        #expect(steps.map(\.from) == [10])
    }
}
