import Testing

@testable import DBWatchDelivery

/// The rules of one client, checked without threads or sockets: the waiter
/// is a number, time is given.
@Suite("A client's mailbox: latest wins, keep-alives, stalls, how a stream ends")
struct ClientMailboxStateMachineTests {
    typealias Machine = ClientMailboxStateMachine<Int>

    let start = ContinuousClock.now
    /// Two observations, kept alive so that their identifiers differ.
    let observations = (Observation(), Observation())
    var source: ObjectIdentifier { ObjectIdentifier(observations.0) }
    var other: ObjectIdentifier { ObjectIdentifier(observations.1) }

    final class Observation: Sendable {}

    func value(_ json: String, version: UInt64 = 1) -> Frame {
        Frame.value(json: Array(json.utf8), version: version)
    }

    func json(_ write: ClientWrite?) -> String? {
        switch write {
        case .frame(let frame)?: String(decoding: frame.serverSentEvent, as: UTF8.self)
        case .end(let frame?)?: String(decoding: frame.serverSentEvent, as: UTF8.self)
        case .end(nil)?: "end"
        case .keepAlive?: "keep-alive"
        case nil: nil
        }
    }

    @Test func aWaitingLoopIsWokenWithTheFrameOffered() {
        var machine = Machine(heldDigest: nil, now: start)
        machine.accept(from: source)
        #expect(machine.next(1, now: start) == nil)
        let offered = machine.offer(value("[1]"), from: source)
        #expect(offered.wake?.0 == 1)
        #expect(json(offered.wake?.1)?.contains("data: [1]") == true)
        #expect(!offered.replaced)
    }

    @Test func aBusyLoopFindsOnlyTheLatestFrame() {
        var machine = Machine(heldDigest: nil, now: start)
        machine.accept(from: source)
        #expect(!machine.offer(value("[1]"), from: source).replaced)
        #expect(machine.offer(value("[2]", version: 2), from: source).replaced)
        #expect(json(machine.next(1, now: start))?.contains("data: [2]") == true)
        #expect(machine.next(2, now: start) == nil)
    }

    @Test func framesOfAnotherObservationAreRefusedAndAPendingOneDroppedOnSwitch() {
        var machine = Machine(heldDigest: nil, now: start)
        machine.accept(from: source)
        _ = machine.offer(value("[1]"), from: source)
        #expect(machine.offer(value("[9]"), from: other).wake == nil)
        machine.accept(from: other)
        #expect(machine.next(1, now: start) == nil, "the pending frame of the observation left was dropped")
    }

    @Test func theValueTheClientHoldsIsNotSentAgainButTheNextIs() {
        let held = value("[1]")
        var machine = Machine(heldDigest: held.digest, now: start)
        machine.accept(from: source)
        #expect(machine.next(1, now: start) == nil)
        #expect(machine.offer(value("[1]", version: 5), from: source).wake == nil)
        #expect(
            machine.offer(value("[1]", version: 6), from: source).wake != nil, "only the first equal value is skipped")
    }

    @Test func shutdownEndsWithTheEndEventBeforeAPendingValue() {
        var machine = Machine(heldDigest: nil, now: start)
        machine.accept(from: source)
        _ = machine.offer(value("[1]"), from: source)
        let finished = machine.finish(.shutdown, now: start)
        #expect(!finished.kill)
        #expect(json(machine.next(1, now: start))?.contains("event: end") == true)
    }

    @Test func aClosedDatabaseDeliversThePendingErrorThenTheEnd() {
        var machine = Machine(heldDigest: nil, now: start)
        machine.accept(from: source)
        _ = machine.offer(.error(ErrorBody(message: "database is closed", code: 21)), from: source)
        _ = machine.finish(.databaseClosed, now: start)
        #expect(json(machine.next(1, now: start))?.contains("event: error") == true)
        #expect(json(machine.next(2, now: start))?.contains(#"{"reason":"database closed"}"#) == true)
        #expect(machine.offer(value("[3]"), from: source).wake == nil, "nothing is offered after the end")
    }

    @Test func aClientThatLeftIsKilledAndItsWaitingLoopEnds() {
        var machine = Machine(heldDigest: nil, now: start)
        #expect(machine.next(7, now: start) == nil)
        #expect(machine.finish(.disconnected, now: start).kill)
        let killed = machine.kill()
        #expect(killed.waiter == 7)
        #expect(!killed.wasWriting)
        #expect(json(machine.next(8, now: start)) == "end")
        #expect(machine.kill().waiter == nil, "killed once")
    }

    @Test func killingDuringAWriteAsksToCancelIt() {
        var machine = Machine(heldDigest: nil, now: start)
        machine.writeStarted(now: start)
        let killed = machine.kill()
        #expect(killed.wasWriting)
        #expect(killed.waiter == nil)
    }

    @Test func anIdleStreamGetsAKeepAliveAfterTheInterval() {
        var machine = Machine(heldDigest: nil, now: start)
        #expect(machine.next(1, now: start) == nil)
        let early = machine.housekeep(
            now: start + .seconds(14), keepAlive: .seconds(15), stallTimeout: .seconds(30), shutdownGrace: .seconds(1))
        guard case .nothing = early else { Issue.record("a keep-alive before the interval"); return }
        let due = machine.housekeep(
            now: start + .seconds(15), keepAlive: .seconds(15), stallTimeout: .seconds(30), shutdownGrace: .seconds(1))
        guard case .wake(let waiter, .keepAlive) = due else { Issue.record("no keep-alive: \(due)"); return }
        #expect(waiter == 1)
    }

    @Test func aWebSocketGetsNoKeepAlive() {
        var machine = Machine(heldDigest: nil, now: start)
        #expect(machine.next(1, now: start) == nil)
        let found = machine.housekeep(
            now: start + .seconds(100), keepAlive: nil, stallTimeout: .seconds(30), shutdownGrace: .seconds(1))
        guard case .nothing = found else { Issue.record("\(found)"); return }
    }

    @Test func aWriteBlockedForTheStallTimeoutStallsTheClient() {
        var machine = Machine(heldDigest: nil, now: start)
        machine.writeStarted(now: start)
        let before = machine.housekeep(
            now: start + .seconds(29), keepAlive: nil, stallTimeout: .seconds(30), shutdownGrace: .seconds(1))
        guard case .nothing = before else { Issue.record("stalled early"); return }
        let after = machine.housekeep(
            now: start + .seconds(30), keepAlive: nil, stallTimeout: .seconds(30), shutdownGrace: .seconds(1))
        guard case .stalled = after else { Issue.record("not stalled: \(after)"); return }
        #expect(machine.finish == .stalled)
    }

    @Test func aWriteBlockedAfterShutdownIsKilledAfterTheGrace() {
        var machine = Machine(heldDigest: nil, now: start)
        machine.writeStarted(now: start)
        _ = machine.finish(.shutdown, now: start + .seconds(1))
        let within = machine.housekeep(
            now: start + .milliseconds(1_500), keepAlive: nil, stallTimeout: .seconds(30), shutdownGrace: .seconds(1))
        guard case .nothing = within else { Issue.record("killed within the grace"); return }
        let over = machine.housekeep(
            now: start + .seconds(2), keepAlive: nil, stallTimeout: .seconds(30), shutdownGrace: .seconds(1))
        guard case .graceOver = over else { Issue.record("not killed after the grace: \(over)"); return }
    }
}

extension ClientWrite: Equatable {
    public static func == (lhs: ClientWrite, rhs: ClientWrite) -> Bool {
        switch (lhs, rhs) {
        case (.frame(let a), .frame(let b)): a === b
        case (.keepAlive, .keepAlive): true
        case (.end(let a), .end(let b)): a === b
        default: false
        }
    }
}
