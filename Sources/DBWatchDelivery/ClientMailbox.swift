import DBWatch

/// One connected client: runs its ``ClientMailboxStateMachine`` under a lock
/// and its write loop in the connection's own task (no task of its own).
///
/// The loop writes each frame with the adapter's `write`; a kill (the client
/// went away, stalled, or the shutdown's grace is over) resumes a waiting
/// loop with the end, or cancels the connection's task when a write is
/// blocked on a socket that takes nothing.
package final class ClientMailbox: Sendable {
    package typealias Finish = ClientFinish
    private typealias Machine = ClientMailboxStateMachine<CheckedContinuation<ClientWrite, Never>>

    private let machine: Locked<Machine>
    /// The task running the write loop, while it runs: a kill cancels it to
    /// end a blocked write. Its own lock: cancelling runs the task's
    /// cancellation handlers, which may call back into ``machine``'s.
    private let loopTask = Locked<RunningTask?>(nil)
    /// Whether idle periods produce keep-alive comments (server-sent events).
    let transport: Transport

    package init(heldDigest: UInt64?, transport: Transport) {
        self.transport = transport
        machine = Locked(Machine(heldDigest: heldDigest, now: .now))
    }

    /// Why the stream ended, once it did.
    package var finishReason: Finish? { machine.withLock { $0.finish } }

    /// Accepts frames from `source` only, and drops a pending frame of another source.
    func accept(from source: ObjectIdentifier?) {
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

    /// What to write next; waits for it.
    private func next() async -> ClientWrite {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ClientWrite, Never>) in
                if let next = machine.withLock({ $0.next(continuation, now: .now) }) {
                    continuation.resume(returning: next)
                }
            }
        } onCancel: {
            // The connection's task was cancelled (its client went away):
            // the loop ends.
            finish(.disconnected)
        }
    }

    /// Runs the write loop in the calling task until the stream ends:
    /// writes frames, keep-alives (``Frame/keepAlive``) and the final frame,
    /// if any, with `write`. Throws when the client must be disconnected
    /// (it went away, stalled, or a write failed).
    package func run(
        counters: LiveQueriesCounters,
        write: (Frame) async throws -> Void
    ) async throws {
        try await withUnsafeCurrentTask { task in
            if let task { loopTask.withLock { $0 = RunningTask(task) } }
            defer { loopTask.withLock { $0 = nil } }
            while true {
                switch await next() {
                case .frame(let frame):
                    try await writing { try await write(frame) }
                    counters.sent(frame)
                case .keepAlive:
                    try await writing { try await write(.keepAlive) }
                case .end(let final):
                    if let final { try await writing { try await write(final) } }
                    if machine.withLock({ $0.isKilled }) { throw CancellationError() }
                    return
                }
            }
        }
    }

    private func writing(_ write: () async throws -> Void) async throws {
        machine.withLock { $0.writeStarted(now: .now) }
        defer { machine.withLock { $0.writeEnded(now: .now) } }
        if machine.withLock({ $0.isKilled }) { throw CancellationError() }
        try await write()
    }
}

/// The task of a running write loop, to cancel from another thread.
private struct RunningTask: @unchecked Sendable {
    // @unchecked: cancelled only while the loop that stored it runs (it is
    // removed under the same lock before the loop returns); cancel is thread-safe.
    let task: UnsafeCurrentTask

    init(_ task: UnsafeCurrentTask) {
        self.task = task
    }

    func cancel() { task.cancel() }
}
