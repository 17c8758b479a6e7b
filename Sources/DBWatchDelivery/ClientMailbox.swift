import DBWatch
import Synchronization

/// One connected client: runs its ``ClientMailboxStateMachine`` under a lock
/// and its write loop in the connection's own task (no task of its own).
///
/// The loop writes each frame with the adapter's `write`; a kill (the client
/// went away, stalled, or the shutdown's grace is over) resumes a waiting
/// loop with the end, or cancels the connection's task when a write is
/// blocked on a socket that takes nothing.
package final class ClientMailbox: Sendable {
    package typealias Finish = ClientFinish
    private typealias Machine = ClientMailboxStateMachine<UnsafeContinuation<ClientWrite, Never>>

    private let machine: Locked<Machine>
    /// The task running the write loop, while it runs: a kill cancels it to
    /// end a blocked write. Its own lock: cancelling runs the task's
    /// cancellation handlers, which may call back into ``machine``'s.
    private let loopTask = Locked<RunningTask?>(nil)
    /// Whether idle periods produce keep-alive comments (server-sent events).
    let transport: Transport
    /// When the client connected.
    package let connectedAt: ContinuousClock.Instant
    /// When it began to follow the source it follows now, in nanoseconds
    /// after ``connectedAt`` (a WebSocket client changes its request): the
    /// commits before are not its news (see
    /// ``LiveQueriesCounters/wrote(_:since:)``).
    private let followingAfter = Atomic<Int64>(0)

    /// Since when the client follows its current source.
    package var followingSince: ContinuousClock.Instant {
        connectedAt + .nanoseconds(followingAfter.load(ordering: .relaxed))
    }

    package init(heldDigest: UInt64?, transport: Transport) {
        self.transport = transport
        let now = ContinuousClock.now
        connectedAt = now
        machine = Locked(Machine(heldDigest: heldDigest, now: now))
    }

    /// Why the stream ended, once it did.
    package var finishReason: Finish? { machine.withLock { $0.finish } }

    /// Accepts frames from `source` only, and drops a pending frame of another source.
    func accept(from source: ObjectIdentifier?) {
        let (seconds, attoseconds) = connectedAt.duration(to: .now).components
        followingAfter.store(seconds * 1_000_000_000 + attoseconds / 1_000_000_000, ordering: .relaxed)
        machine.withLock { $0.accept(from: source) }
    }

    /// Offers a frame of `source` (nil: the client's own, such as a refused
    /// request); returns whether it replaced a pending one.
    @discardableResult
    package func offer(_ frame: Frame, from source: ObjectIdentifier? = nil) -> Bool {
        let offered = machine.withLock { $0.offer(frame, from: source) }
        if let (waiter, next) = offered.wake { waiter.resume(returning: next) }
        return offered.replaced
    }

    /// Ends the stream for `reason` (the first reason wins). A client that
    /// went away or stalled is killed at once: a blocked write is cancelled.
    package func finish(_ reason: Finish) {
        let (wake, kill) = machine.withLock { $0.finish(reason, now: .now) }
        if let (waiter, next) = wake { waiter.resume(returning: next) }
        if kill { self.kill() }
    }

    /// Stops the client now: a waiting loop ends, a blocked write is cancelled.
    func kill() {
        let (waiter, wasWriting) = machine.withLock { $0.kill() }
        waiter?.resume(returning: .end(nil))
        if wasWriting { loopTask.withLock { $0?.cancel() } }
    }

    /// How long the write in progress has been waiting for its socket, if one is.
    func writeInProgress(now: ContinuousClock.Instant) -> Duration? {
        machine.withLock { $0.writeInProgress(now: now) }
    }

    /// Periodic check; returns true when the client was found stalled (and killed).
    func housekeep(now: ContinuousClock.Instant, configuration: LiveQueriesConfiguration) -> Bool {
        let found = machine.withLock {
            $0.housekeep(
                now: now, keepAlive: transport == .serverSentEvents ? configuration.keepAliveInterval : nil,
                stallTimeout: configuration.stalledClientTimeout, shutdownGrace: configuration.shutdownWriteGrace)
        }
        switch found {
        case .nothing: return false
        case .wake(let waiter, let next):
            waiter.resume(returning: next)
            return false
        case .graceOver:
            kill()
            return false
        case .stalled:
            kill()
            return true
        }
    }

    /// Runs the write loop in the calling task until the stream ends:
    /// writes frames, keep-alives (``Frame/keepAlive``) and the final frame,
    /// if any, with `write`. Throws when the client must be disconnected
    /// (it went away, stalled, or a write failed).
    ///
    /// One flat loop: each connection's task keeps its suspended async
    /// frames in its own allocator's slabs for as long as it lives, so the
    /// loop waits in an `UnsafeContinuation` directly inside it, with one
    /// cancellation handler installed around the whole loop (not one per
    /// wait) and no closure around each write.
    package func run(
        counters: LiveQueriesCounters,
        write: (Frame) async throws -> Void
    ) async throws {
        if let task = withUnsafeCurrentTask(body: { $0.map(RunningTask.init) }) {
            loopTask.withLock { $0 = task }
        }
        defer { loopTask.withLock { $0 = nil } }
        try await withTaskCancellationHandler {
            while true {
                let next = await withUnsafeContinuation { (continuation: UnsafeContinuation<ClientWrite, Never>) in
                    if let next = machine.withLock({ $0.next(continuation, now: .now) }) {
                        continuation.resume(returning: next)
                    }
                }
                let frame: Frame?
                switch next {
                case .frame(let value): frame = value
                case .keepAlive: frame = .keepAlive
                case .end(let final): frame = final
                }
                if let frame {
                    let killed = machine.withLock { machine in
                        machine.writeStarted(now: .now)
                        return machine.isKilled
                    }
                    defer { machine.withLock { $0.writeEnded(now: .now) } }
                    if killed { throw CancellationError() }
                    try await write(frame)
                    counters.wrote(frame, since: followingSince)
                }
                switch next {
                case .frame(let frame): counters.sent(frame)
                case .keepAlive: break
                case .end:
                    if machine.withLock({ $0.isKilled }) { throw CancellationError() }
                    return
                }
            }
        } onCancel: {
            // The connection's task was cancelled (its client went away, or
            // a kill cancelled a blocked write): the loop ends.
            finish(.disconnected)
        }
    }
}

/// The task of a running write loop, to cancel from another thread.
private struct RunningTask: @unchecked Sendable {
    // @unchecked: cancelled only while its loop runs in that task (cleared before run returns); cancel is thread-safe.
    let task: UnsafeCurrentTask

    init(_ task: UnsafeCurrentTask) {
        self.task = task
    }

    func cancel() { task.cancel() }
}
