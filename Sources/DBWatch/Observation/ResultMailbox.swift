import Synchronization

/// One consumer's mailbox: holds at most the latest undelivered result
/// (latest wins, so a slow consumer never makes memory grow) and the
/// consumer's suspended `next()`.
///
/// Each iteration of a ``QueryObservation`` owns one (through its
/// `QueryObservation.Subscription`, which finishes it when dropped), and so
/// does each subscriber of a ``LiveQuery``. An ``ObservationDriver`` or a
/// live query hands results in; the consumer takes them out with ``next()``.
final class ResultMailbox<Value: Sendable>: Sendable {
    private struct State {
        var latest: Result<Value, any Error>?
        /// The error that ends the subscription, kept behind a value still
        /// waiting for the consumer (see ``hand(_:ending:)``).
        var last: Result<Value, any Error>?
        var waiter: CheckedContinuation<Result<Value, any Error>?, Never>?
        var isFinished = false
        /// The consumer gets what is waiting for it, then the end.
        var isEnding = false
        /// Whether this consumer has received a first value.
        var hasReceived = false
    }

    private let state = Locked(State())
    /// Called once when the consumer goes away (cancelled or finished).
    let onFinish: @Sendable (ObjectIdentifier) -> Void

    init(onFinish: @escaping @Sendable (ObjectIdentifier) -> Void) {
        self.onFinish = onFinish
    }

    var hasReceived: Bool { state.withLock { $0.hasReceived } }

    /// A consumer to wake with what it receives. Callers that hand results
    /// under a lock of their own (to keep their order) wake it after
    /// releasing that lock: a wake-up can take microseconds, during which
    /// the writer would wait for the lock.
    struct Wakeup {
        fileprivate let continuation: CheckedContinuation<Result<Value, any Error>?, Never>
        fileprivate let result: Result<Value, any Error>?

        func resume() { continuation.resume(returning: result) }
    }

    /// Offers a result: wakes the consumer or replaces an undelivered one.
    func offer(_ result: Result<Value, any Error>) {
        hand(result, ending: false)?.resume()
    }

    /// Offers a result now and returns the consumer to wake, if it waits:
    /// call ``Wakeup/resume()`` once the caller's lock is released.
    func offerWakingLater(_ result: Result<Value, any Error>) -> Wakeup? {
        hand(result, ending: false)
    }

    /// The next result, or `nil` once finished or cancelled.
    func next() async -> Result<Value, any Error>? {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate = state.withLock { state -> Result<Value, any Error>?? in
                    if let latest = state.latest {
                        state.latest = state.last.take()
                        return .some(latest)
                    }
                    if state.isFinished || state.isEnding { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
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
    func finish(after last: Result<Value, any Error>?) {
        hand(last, ending: true)?.resume()
    }

    /// ``finish(after:)``, returning the consumer to wake once the caller's
    /// lock is released.
    func finishWakingLater(after last: Result<Value, any Error>?) -> Wakeup? {
        hand(last, ending: true)
    }

    /// Gives `result` to a waiting consumer, or keeps it as the latest
    /// (latest wins); when `ending`, nothing follows it, and a final error
    /// waits behind a value the consumer has not taken yet, so that at most
    /// two results wait. A waiting consumer handed `nil` sees the end (and
    /// its `next()` then finishes the subscription).
    private func hand(_ result: Result<Value, any Error>?, ending: Bool) -> Wakeup? {
        state.withLock { state -> Wakeup? in
            guard !state.isFinished, !state.isEnding else { return nil }
            if ending { state.isEnding = true }
            if result != nil { state.hasReceived = true }
            if let waiter = state.waiter {
                state.waiter = nil
                return Wakeup(continuation: waiter, result: result)
            }
            guard let result else { return nil }
            if ending, case .success = state.latest, case .failure = result {
                state.last = result
            } else {
                state.latest = result
            }
            return nil
        }
    }

    /// Ends the subscription: a waiting consumer gets `nil`; the owner is told once.
    func finish() {
        let (waiter, first) = state.withLock { state in
            defer {
                state.isFinished = true
                state.waiter = nil
                state.latest = nil
                state.last = nil
            }
            return (state.waiter, !state.isFinished)
        }
        waiter?.resume(returning: nil)
        if first { onFinish(ObjectIdentifier(self)) }
    }
}
