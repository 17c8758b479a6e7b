import NIOCore
import DBWatch

/// One connected client: at most one pending frame (latest wins), and what
/// ends its stream (disconnect, stall, shutdown, closed database).
final class ClientMailbox: Sendable {
    /// What ends a client's stream.
    enum Finish: Sendable, Equatable {
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
    }

    /// What the client's write loop does next.
    enum Next: Sendable {
        case frame(Frame)
        case keepAlive
        /// The end; writes the final frame first, if any.
        case end(Frame?)
    }

    private struct State {
        var pending: Frame?
        /// The digest of the value the client holds (`Last-Event-ID`): the
        /// first value frame with it is not sent.
        var skipDigest: UInt64?
        /// The shared observation whose frames this client accepts.
        var source: ObjectIdentifier?
        var keepAliveDue = false
        var finish: Finish?
        var finishedAt: ContinuousClock.Instant?
        var waiter: CheckedContinuation<Next, Never>?
        var killed = false
        var killWaiter: CheckedContinuation<Void, Never>?
        /// The write loop ended, or the waiting task was cancelled.
        var stopWaiting = false
        var writeStartedAt: ContinuousClock.Instant?
        var lastActivity: ContinuousClock.Instant
    }

    private let state: Locked<State>
    /// Whether idle periods produce keep-alive comments (server-sent events).
    let keepsAlive: Bool

    init(skipDigest: UInt64?, keepsAlive: Bool) {
        self.keepsAlive = keepsAlive
        state = Locked(State(skipDigest: skipDigest, lastActivity: .now))
    }

    var finishReason: Finish? { state.withLock { $0.finish } }

    /// Accepts frames from `source` only, and drops a pending frame of
    /// another source.
    func accept(from source: ObjectIdentifier?) {
        state.withLock { state in
            if state.source != source { state.pending = nil }
            state.source = source
        }
    }

    /// Offers a frame of `source`; returns whether it replaced a pending one.
    @discardableResult
    func offer(_ frame: Frame, from source: ObjectIdentifier?) -> Bool {
        let (waiter, next, replaced): (CheckedContinuation<Next, Never>?, Next?, Bool) = state.withLock { state in
            guard state.finish == nil, !state.killed, state.source == source else { return (nil, nil, false) }
            switch frame.kind {
            case .value:
                if let skip = state.skipDigest {
                    state.skipDigest = nil
                    if skip == frame.digest { return (nil, nil, false) }
                }
            case .error, .end:
                state.skipDigest = nil
            }
            let replaced = state.pending != nil
            state.pending = frame
            let (waiter, next) = Self.wake(&state)
            return (waiter, next, replaced)
        }
        if let waiter, let next { waiter.resume(returning: next) }
        return replaced
    }

    /// Offers a frame that belongs to no observation (a request that does
    /// not decode).
    func offerDirect(_ frame: Frame) {
        let source = state.withLock { $0.source }
        offer(frame, from: source)
    }

    /// Ends the stream for `reason` (the first reason wins). A client that
    /// went away is killed at once: a blocked write is cancelled.
    func finish(_ reason: Finish) {
        let wake: (CheckedContinuation<Next, Never>?, Next?) = state.withLock { state in
            guard state.finish == nil else { return (nil, nil) }
            state.finish = reason
            state.finishedAt = .now
            return Self.wake(&state)
        }
        if let waiter = wake.0, let next = wake.1 { waiter.resume(returning: next) }
        if reason == .disconnected || reason == .stalled { kill() }
    }

    /// Stops the client now: its pending wait ends, its blocked write is cancelled.
    func kill() {
        let (waiter, killWaiter): (CheckedContinuation<Next, Never>?, CheckedContinuation<Void, Never>?) =
            state.withLock { state in
                guard !state.killed else { return (nil, nil) }
                state.killed = true
                defer {
                    state.waiter = nil
                    state.killWaiter = nil
                }
                return (state.waiter, state.killWaiter)
            }
        waiter?.resume(returning: .end(nil))
        killWaiter?.resume()
    }

    /// The next thing to write; waits for it.
    func next() async -> Next {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Next, Never>) in
                let next: Next? = state.withLock { state in
                    if let next = Self.take(&state) { return next }
                    state.waiter = continuation
                    return nil
                }
                if let next { continuation.resume(returning: next) }
            }
        } onCancel: {
            kill()
        }
    }

    /// Returns once the client is killed, or when the calling task is cancelled.
    func waitUntilKilled() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.killed || state.stopWaiting { return true }
                    state.killWaiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            stopWaiting()
        }
    }

    /// Ends ``waitUntilKilled()`` without killing.
    private func stopWaiting() {
        let waiter = state.withLock { state in
            state.stopWaiting = true
            defer { state.killWaiter = nil }
            return state.killWaiter
        }
        waiter?.resume()
    }

    func writeStarted() {
        state.withLock { $0.writeStartedAt = .now }
    }

    /// How long the write in progress has been waiting, if there is one.
    func writeInProgress(now: ContinuousClock.Instant) -> Duration? {
        state.withLock { state in state.writeStartedAt.map { now - $0 } }
    }

    func writeEnded() {
        state.withLock { state in
            state.writeStartedAt = nil
            state.lastActivity = .now
        }
    }

    /// Periodic check: keep-alive due, write stalled, shutdown grace over.
    /// Returns true when the client was found stalled.
    func housekeep(now: ContinuousClock.Instant, configuration: LiveQueriesConfiguration) -> Bool {
        enum Action { case none, wake(CheckedContinuation<Next, Never>, Next), kill, stalled }
        let action: Action = state.withLock { state in
            guard !state.killed else { return .none }
            if let started = state.writeStartedAt {
                if state.finish == nil, now - started >= configuration.stalledClientTimeout {
                    state.finish = .stalled
                    state.finishedAt = now
                    return .stalled
                }
                if state.finish == .shutdown, let finishedAt = state.finishedAt,
                    now - finishedAt >= configuration.shutdownWriteGrace
                {
                    return .kill
                }
                return .none
            }
            if keepsAlive, state.waiter != nil, now - state.lastActivity >= configuration.keepAliveInterval {
                state.keepAliveDue = true
                let (waiter, next) = Self.wake(&state)
                if let waiter, let next { return .wake(waiter, next) }
            }
            return .none
        }
        switch action {
        case .none: return false
        case .wake(let waiter, let next):
            waiter.resume(returning: next)
            return false
        case .kill:
            kill()
            return false
        case .stalled:
            kill()
            return true
        }
    }

    /// Takes the waiter and what it gets, if something is ready.
    private static func wake(_ state: inout State) -> (CheckedContinuation<Next, Never>?, Next?) {
        guard let waiter = state.waiter, let next = take(&state) else { return (nil, nil) }
        state.waiter = nil
        return (waiter, next)
    }

    /// What is ready for the write loop, in order: the end of a killed
    /// client, a shutdown's final event, the pending frame, the end of a
    /// finished stream, a keep-alive.
    private static func take(_ state: inout State) -> Next? {
        if state.killed { return .end(nil) }
        if state.finish == .shutdown { return .end(.end(reason: "shutdown")) }
        if let frame = state.pending {
            state.pending = nil
            return .frame(frame)
        }
        switch state.finish {
        case .databaseClosed: return .end(.end(reason: "database closed"))
        case .databaseReplaced: return .end(.end(reason: "database file replaced"))
        case .disconnected, .stalled: return .end(nil)
        case .shutdown, nil: break
        }
        if state.keepAliveDue {
            state.keepAliveDue = false
            return .keepAlive
        }
        return nil
    }

    /// Runs the client's write loop until its stream ends; a kill cancels a
    /// blocked write. Throws when the client must be disconnected (it went
    /// away, stalled, or a write failed).
    func run(
        keepAlive: ByteBuffer?,
        bytes: @escaping @Sendable (Frame) -> ByteBuffer,
        counters: LiveQueriesCounters,
        write: @escaping @Sendable (ByteBuffer) async throws -> Void
    ) async throws {
        // The loop runs in a child task so that a kill can cancel its
        // blocked write; this task waits for the kill or the loop's end.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { self.stopWaiting() }
                while true {
                    switch await self.next() {
                    case .frame(let frame):
                        try await self.write(bytes(frame), write)
                        counters.sent(frame)
                    case .keepAlive:
                        if let keepAlive { try await self.write(keepAlive, write) }
                    case .end(let final):
                        if let final { try await self.write(bytes(final), write) }
                        if self.state.withLock({ $0.killed }) { throw CancellationError() }
                        return
                    }
                }
            }
            await waitUntilKilled()
            if state.withLock({ $0.killed }) { group.cancelAll() }
            try await group.next()
        }
    }

    private func write(_ buffer: ByteBuffer, _ write: @Sendable (ByteBuffer) async throws -> Void) async throws {
        writeStarted()
        defer { writeEnded() }
        try await write(buffer)
    }
}
