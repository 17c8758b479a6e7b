/// What ends a client's stream.
package enum ClientFinish: Sendable, Equatable {
    /// The client went away: nothing more is written.
    case disconnected
    /// A write made no progress for the stall timeout.
    case stalled
    /// Graceful shutdown: a final event, then the end.
    case shutdown
    /// The database closed: the pending error, a final event, the end.
    case databaseClosed
    /// The database file was replaced or deleted: the pending error, a
    /// final event, the end.
    case databaseReplaced
    /// A subscription refused after the stream started: the pending
    /// error, a final event, the end.
    case refused
}

/// What a client's write loop does next.
package enum ClientWrite: Sendable {
    case frame(Frame)
    case keepAlive
    /// The end; writes the final frame first, if any.
    case end(Frame?)
}

/// The state of one connected client, and what each event makes its owner
/// (``ClientMailbox``) do: at most one pending frame (latest wins), a
/// keep-alive when idle, the stall rule, and how the stream ends.
///
/// Transitions return actions; the owner runs them outside its lock.
/// `Waiter` is the suspended write loop (a continuation; anything in tests).
package struct ClientMailboxStateMachine<Waiter> {
    package typealias Finish = ClientFinish
    package typealias Next = ClientWrite

    /// What waits to be written.
    package enum Pending {
        case nothing
        case keepAlive
        case frame(Frame)
    }

    /// The write loop.
    package enum Loop {
        /// Between writes, not waiting yet; `since` is the end of the last write.
        case busy(since: ContinuousClock.Instant)
        /// Suspended until there is something to write.
        case waiting(Waiter, since: ContinuousClock.Instant)
        /// Writing; `since` is when the write started.
        case writing(since: ContinuousClock.Instant)
    }

    package enum State {
        /// Values flow.
        case streaming(Loop)
        /// The stream ends: the loop writes what the reason leaves it, then stops.
        case finishing(Finish, at: ContinuousClock.Instant, Loop)
        /// Stopped: nothing more is written, a blocked write is cancelled.
        case killed
    }

    package private(set) var state: State
    private var pending = Pending.nothing
    /// The digest of the value the client holds (`Last-Event-ID`): the first
    /// value frame with it is not sent.
    private var heldDigest: UInt64?
    /// The shared observation whose frames this client accepts.
    private var source: ObjectIdentifier?

    package init(heldDigest: UInt64?, now: ContinuousClock.Instant) {
        state = .streaming(.busy(since: now))
        self.heldDigest = heldDigest
    }

    /// The reason the stream ends, once it does.
    package var finish: Finish? {
        switch state {
        case .streaming: nil
        case .finishing(let finish, _, _): finish
        case .killed: .disconnected
        }
    }

    package var isKilled: Bool {
        if case .killed = state { return true }
        return false
    }

    /// Accepts frames from `source` only; a pending frame of another source is dropped.
    package mutating func accept(from source: ObjectIdentifier?) {
        if self.source != source, case .frame = pending { pending = .nothing }
        self.source = source
    }

    /// The outcome of ``offer(_:from:)``.
    package struct Offered {
        /// The loop to wake with what it writes next.
        package var wake: (Waiter, Next)?
        /// Whether the frame replaced a pending one that was never written.
        package var replaced = false
    }

    /// A frame of `source` (nil: the client's own, such as a refusal).
    package mutating func offer(_ frame: Frame, from source: ObjectIdentifier?) -> Offered {
        guard case .streaming = state else { return Offered() }
        if let source, source != self.source { return Offered() }
        switch frame.kind {
        case .value:
            if let held = heldDigest.take(), held == frame.digest { return Offered() }
        case .error, .end, .keepAlive:
            heldDigest = nil
        }
        var offered = Offered()
        if case .frame = pending { offered.replaced = true }
        pending = .frame(frame)
        offered.wake = wakeLoop()
        return offered
    }

    /// The stream ends for `reason` (the first reason wins). Returns the loop
    /// to wake, and whether the client must be killed at once (it went away
    /// or stalled: a blocked write is cancelled).
    package mutating func finish(_ reason: Finish, now: ContinuousClock.Instant) -> (wake: (Waiter, Next)?, kill: Bool)
    {
        guard case .streaming(let loop) = state else { return (nil, false) }
        state = .finishing(reason, at: now, loop)
        if reason == .disconnected || reason == .stalled { return (nil, true) }
        return (wakeLoop(), false)
    }

    /// Kills the client: returns a waiting loop (to resume with the end) and
    /// whether a write is in progress (to cancel).
    package mutating func kill() -> (waiter: Waiter?, wasWriting: Bool) {
        let loop: Loop
        switch state {
        case .killed: return (nil, false)
        case .streaming(let current), .finishing(_, _, let current): loop = current
        }
        state = .killed
        pending = .nothing
        switch loop {
        case .waiting(let waiter, _): return (waiter, false)
        case .writing: return (nil, true)
        case .busy: return (nil, false)
        }
    }

    /// The loop asks for what to write: returns it, or nil when the loop
    /// must wait (the waiter is kept).
    package mutating func next(_ waiter: Waiter, now: ContinuousClock.Instant) -> Next? {
        if let next = take() { return next }
        setLoop(.waiting(waiter, since: loopActivity ?? now))
        return nil
    }

    /// The waiting loop was cancelled: it must not be resumed by anyone else.
    package mutating func cancelWaiting() -> Waiter? {
        guard let loop, case .waiting(let waiter, let since) = loop else { return nil }
        setLoop(.busy(since: since))
        return waiter
    }

    package mutating func writeStarted(now: ContinuousClock.Instant) {
        setLoop(.writing(since: now))
    }

    package mutating func writeEnded(now: ContinuousClock.Instant) {
        setLoop(.busy(since: now))
    }

    /// How long the write in progress has waited, if one is in progress.
    package func writeInProgress(now: ContinuousClock.Instant) -> Duration? {
        guard let loop, case .writing(let since) = loop else { return nil }
        return now - since
    }

    /// What a periodic check finds.
    package enum Housekeeping {
        case nothing
        /// A keep-alive is due: wake the loop with it.
        case wake(Waiter, Next)
        /// A write made no progress for the stall timeout: kill the client (counted as stalled).
        case stalled
        /// The shutdown's write grace is over: kill the client.
        case graceOver
    }

    /// Keep-alive due, write stalled, shutdown grace over.
    package mutating func housekeep(
        now: ContinuousClock.Instant, keepAlive: Duration?, stallTimeout: Duration, shutdownGrace: Duration
    ) -> Housekeeping {
        switch state {
        case .killed:
            return .nothing
        case .streaming(.writing(let since)):
            guard now - since >= stallTimeout else { return .nothing }
            state = .finishing(.stalled, at: now, .writing(since: since))
            return .stalled
        case .finishing(.shutdown, let at, .writing):
            return now - at >= shutdownGrace ? .graceOver : .nothing
        case .streaming(.waiting(_, let since)):
            guard let keepAlive, now - since >= keepAlive else { return .nothing }
            if case .nothing = pending { pending = .keepAlive }
            if let wake = wakeLoop() { return .wake(wake.0, wake.1) }
            return .nothing
        case .streaming, .finishing:
            return .nothing
        }
    }

    // MARK: - Private

    private var loop: Loop? {
        switch state {
        case .streaming(let loop), .finishing(_, _, let loop): loop
        case .killed: nil
        }
    }

    private var loopActivity: ContinuousClock.Instant? {
        switch loop {
        case .busy(let since)?, .waiting(_, let since)?, .writing(let since)?: since
        case nil: nil
        }
    }

    private mutating func setLoop(_ loop: Loop) {
        switch state {
        case .streaming: state = .streaming(loop)
        case .finishing(let finish, let at, _): state = .finishing(finish, at: at, loop)
        case .killed: break
        }
    }

    /// Takes the waiting loop and what it gets, if something is ready.
    private mutating func wakeLoop() -> (Waiter, Next)? {
        guard let loop, case .waiting(let waiter, let since) = loop, let next = take() else { return nil }
        setLoop(.busy(since: since))
        return (waiter, next)
    }

    /// What is ready for the write loop, in order: the end of a killed
    /// client, a shutdown's final event, the pending frame, the end of a
    /// finished stream, a keep-alive.
    private mutating func take() -> Next? {
        switch state {
        case .killed:
            return .end(nil)
        case .finishing(.shutdown, _, _):
            return .end(.end(.shutdown))
        case .finishing(let finish, _, _):
            if case .frame(let frame) = pending {
                pending = .nothing
                return .frame(frame)
            }
            switch finish {
            case .databaseClosed: return .end(.end(.databaseClosed))
            case .databaseReplaced: return .end(.end(.databaseReplaced))
            case .refused: return .end(.end(.tooManyObservations))
            case .disconnected, .stalled, .shutdown: return .end(nil)
            }
        case .streaming:
            switch pending {
            case .nothing: return nil
            case .keepAlive:
                pending = .nothing
                return .keepAlive
            case .frame(let frame):
                pending = .nothing
                return .frame(frame)
            }
        }
    }
}
