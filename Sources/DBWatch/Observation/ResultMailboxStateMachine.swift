/// The states of one consumer's mailbox (``ResultMailbox``) and their
/// transitions: each transition changes the state and returns what its
/// owner must do, which the owner does once its lock is released (resume
/// the consumer, tell the driver the consumer left).
///
/// At most two results ever wait: the latest (latest wins) and, when the
/// mailbox is ending, a final error behind a value the consumer has not
/// taken yet. Each carries its position (see ``PositionedResult``); a
/// mailbox that reports unchanged fetches (the sync protocol's) also gets
/// positions without a result, which move the waiting result's position
/// forward instead of replacing it. `Waiter` is the suspended consumer (a
/// continuation; tests use any token).
struct ResultMailboxStateMachine<Value, Waiter> {
    typealias Element = PositionedResult<Value>

    /// What waits for the consumer once the mailbox is ending.
    enum Leftover {
        case none
        case one(Element)
        /// A value the consumer has not taken, then the final error.
        case two(Element, Element)
    }

    enum State {
        /// Nothing waits and the consumer is not suspended.
        case empty(hasReceived: Bool)
        /// The consumer is suspended in `next()`.
        case suspended(Waiter, hasReceived: Bool)
        /// A result waits for the consumer's next `next()`.
        case holding(Element)
        /// Nothing more is accepted: the consumer gets what is left, then the end.
        case ending(Leftover)
        /// The consumer went away (or took the end): nothing waits.
        case finished
    }

    /// What to do after handing a result in.
    enum HandAction {
        case none
        /// Wake the suspended consumer with this result (`nil`: the end).
        case resume(Waiter, with: Element?)
    }

    /// What to do when the consumer asks for the next result.
    enum NextAction {
        /// Resume at once with this result (`nil`: the end).
        case resume(with: Element?)
        /// The consumer is now suspended: a later hand-in resumes it.
        case suspend
    }

    /// What to do when the subscription ends.
    struct FinishAction {
        /// A suspended consumer, to resume with `nil`.
        var waiter: Waiter?
        /// Whether this is the first finish: the owner is told once.
        var isFirst: Bool
    }

    private(set) var state: State = .empty(hasReceived: false)

    /// Whether the consumer has been handed a result (or the mailbox ended).
    var hasReceived: Bool {
        switch state {
        case .empty(let hasReceived), .suspended(_, let hasReceived): hasReceived
        case .holding, .ending, .finished: true
        }
    }

    /// Hands `result` in: to the suspended consumer, or kept as the latest
    /// (replacing one not taken yet). When `ending`, nothing more is
    /// accepted after it: `nil` ends without a last result, and a final
    /// error waits behind a value not taken yet instead of replacing it.
    mutating func hand(_ result: Result<Value, any Error>?, at position: UInt64, ending: Bool) -> HandAction {
        hand(result.map { Element($0, at: position) }, ending: ending)
    }

    /// A fetch at `position` found the last result unchanged: a result not
    /// taken yet is current at `position` too; otherwise the consumer
    /// gets the position alone.
    mutating func noteUnchanged(at position: UInt64) -> HandAction {
        switch state {
        case .ending, .finished:
            return .none
        case .suspended(let waiter, let hasReceived):
            state = .empty(hasReceived: hasReceived)
            return .resume(waiter, with: Element(nil, at: position))
        case .empty:
            state = .holding(Element(nil, at: position))
            return .none
        case .holding(var latest):
            latest.position = position
            state = .holding(latest)
            return .none
        }
    }

    private mutating func hand(_ result: Element?, ending: Bool) -> HandAction {
        switch state {
        case .ending, .finished:
            return .none
        case .suspended(let waiter, let hasReceived):
            state = ending ? .ending(.none) : .empty(hasReceived: hasReceived || result != nil)
            return .resume(waiter, with: result)
        case .empty(let hasReceived):
            switch (result, ending) {
            case (nil, false): state = .empty(hasReceived: hasReceived)
            case (nil, true): state = .ending(.none)
            case (let result?, false): state = .holding(result)
            case (let result?, true): state = .ending(.one(result))
            }
            return .none
        case .holding(let latest):
            switch (result, ending) {
            case (nil, false): break
            case (nil, true): state = .ending(.one(latest))
            case (let result?, false): state = .holding(result)
            case (let result?, true):
                if case .success? = latest.result, case .failure? = result.result {
                    state = .ending(.two(latest, result))
                } else {
                    state = .ending(.one(result))
                }
            }
            return .none
        }
    }

    /// The consumer asks for the next result, and suspends as `waiter` when
    /// none waits. One consumer: it never asks while suspended.
    mutating func next(_ waiter: Waiter) -> NextAction {
        switch state {
        case .empty(let hasReceived):
            state = .suspended(waiter, hasReceived: hasReceived)
            return .suspend
        case .suspended:
            preconditionFailure("one consumer per mailbox: next() while suspended")
        case .holding(let latest):
            state = .empty(hasReceived: true)
            return .resume(with: latest)
        case .ending(.two(let first, let last)):
            state = .ending(.one(last))
            return .resume(with: first)
        case .ending(.one(let last)):
            state = .ending(.none)
            return .resume(with: last)
        case .ending(.none), .finished:
            return .resume(with: nil)
        }
    }

    /// The subscription ends (the consumer was cancelled, stopped, or took
    /// the end): what waits is dropped.
    mutating func finish() -> FinishAction {
        switch state {
        case .finished:
            return FinishAction(waiter: nil, isFirst: false)
        case .suspended(let waiter, _):
            state = .finished
            return FinishAction(waiter: waiter, isFirst: true)
        case .empty, .holding, .ending:
            state = .finished
            return FinishAction(waiter: nil, isFirst: true)
        }
    }
}
