import Synchronization

/// One consumer's mailbox: holds at most the latest undelivered result
/// (latest wins, so a slow consumer never makes memory grow) and the
/// consumer's suspended `next()`.
///
/// Each iteration of a ``QueryObservation`` owns one (through its
/// `QueryObservation.Subscription`, which finishes it when dropped), and so
/// does each subscriber of a ``LiveQuery``. An ``ObservationDriver`` or a
/// live query hands results in; the consumer takes them out with ``next()``.
/// Its states and transitions are ``ResultMailboxStateMachine``; this class
/// runs them under its lock and acts on them outside it.
final class ResultMailbox<Value: Sendable>: Sendable {
    private typealias Continuation = CheckedContinuation<PositionedResult<Value>?, Never>
    private typealias StateMachine = ResultMailboxStateMachine<Value, Continuation>

    private let state = Locked(StateMachine())
    /// Told once when the consumer goes away (cancelled or finished).
    private let owner: any ResultMailboxOwner
    /// Whether the driver tells it of fetches that found the result
    /// unchanged (``noteUnchangedWakingLater(at:)``): the sync protocol's
    /// subscriptions, which must know how far their value is current.
    let reportsUnchanged: Bool

    /// A mailbox whose `owner` (the driver that hands it results) is told
    /// when its consumer goes away: no closure to allocate per subscription.
    init(owner: some ResultMailboxOwner, reportsUnchanged: Bool = false) {
        self.owner = owner
        self.reportsUnchanged = reportsUnchanged
    }

    /// A mailbox that calls `onFinish` once when its consumer goes away.
    convenience init(onFinish: @escaping @Sendable (ObjectIdentifier) -> Void) {
        self.init(owner: FinishCallback(onFinish))
    }

    /// Whether this consumer has received a first result.
    var hasReceived: Bool { state.withLock { $0.hasReceived } }

    /// A consumer to wake with what it receives. Callers that hand results
    /// under a lock of their own (to keep their order) wake it after
    /// releasing that lock: a wake-up can take microseconds, during which
    /// the writer would wait for the lock.
    struct Wakeup {
        fileprivate let continuation: CheckedContinuation<PositionedResult<Value>?, Never>
        fileprivate let result: PositionedResult<Value>?

        func resume() { continuation.resume(returning: result) }
    }

    /// Offers a result: wakes the consumer or replaces an undelivered one.
    func offer(_ result: Result<Value, any Error>, at position: UInt64) {
        hand(result, at: position, ending: false)?.resume()
    }

    /// Offers a result now and returns the consumer to wake, if it waits:
    /// call ``Wakeup/resume()`` once the caller's lock is released.
    func offerWakingLater(_ result: Result<Value, any Error>, at position: UInt64) -> Wakeup? {
        hand(result, at: position, ending: false)
    }

    /// A fetch at `position` found the result unchanged (see
    /// ``ResultMailboxStateMachine/noteUnchanged(at:)``); returns the
    /// consumer to wake, if it waits.
    func noteUnchangedWakingLater(at position: UInt64) -> Wakeup? {
        switch state.withLock({ $0.noteUnchanged(at: position) }) {
        case .none: nil
        case .resume(let continuation, let result): Wakeup(continuation: continuation, result: result)
        }
    }

    /// The next result, or `nil` once finished or cancelled. Positions
    /// alone (unchanged fetches) are skipped.
    func next() async -> Result<Value, any Error>? {
        while let next = await nextPositioned() {
            if let result = next.result { return result }
        }
        return nil
    }

    /// The next result with its position, or a position alone (an
    /// unchanged fetch), or `nil` once finished or cancelled.
    func nextPositioned() async -> PositionedResult<Value>? {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                switch state.withLock({ $0.next(continuation) }) {
                case .resume(let result): continuation.resume(returning: result)
                case .suspend: break
                }
            }
        } onCancel: {
            finish()
        }
        if result == nil { finish() }
        return result
    }

    /// Ends the subscription once the consumer has taken the result waiting
    /// for it, or after `last` when given: the database closed. A value
    /// still waiting is delivered before `last` (the value of a commit made
    /// before the close); a waiting error is replaced by it.
    func finish(after last: Result<Value, any Error>?, at position: UInt64) {
        hand(last, at: position, ending: true)?.resume()
    }

    /// ``finish(after:at:)``, returning the consumer to wake once the caller's
    /// lock is released.
    func finishWakingLater(after last: Result<Value, any Error>?, at position: UInt64) -> Wakeup? {
        hand(last, at: position, ending: true)
    }

    /// Runs ``ResultMailboxStateMachine/hand(_:at:ending:)``: returns the
    /// consumer to wake, if it was suspended.
    private func hand(_ result: Result<Value, any Error>?, at position: UInt64, ending: Bool) -> Wakeup? {
        switch state.withLock({ $0.hand(result, at: position, ending: ending) }) {
        case .none: nil
        case .resume(let continuation, let result): Wakeup(continuation: continuation, result: result)
        }
    }

    /// Ends the subscription: a waiting consumer gets `nil`; the owner is told once.
    func finish() {
        let action = state.withLock { $0.finish() }
        action.waiter?.resume(returning: nil)
        if action.isFirst { owner.remove(ObjectIdentifier(self)) }
    }
}

/// Whoever hands results to a ``ResultMailbox`` and must hear when its
/// consumer goes away (an ``ObservationDriver``).
protocol ResultMailboxOwner: AnyObject, Sendable {
    /// The consumer of the mailbox `id` went away: hand it nothing more.
    func remove(_ id: ObjectIdentifier)
}

/// A closure as the owner of a mailbox (a ``LiveQuery``'s subscribers, tests).
private final class FinishCallback: ResultMailboxOwner {
    let body: @Sendable (ObjectIdentifier) -> Void

    init(_ body: @escaping @Sendable (ObjectIdentifier) -> Void) {
        self.body = body
    }

    func remove(_ id: ObjectIdentifier) { body(id) }
}
