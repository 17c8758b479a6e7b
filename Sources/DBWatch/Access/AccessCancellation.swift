/// The cancellation of one database access: cancelling before it runs
/// skips it, cancelling while it runs interrupts its statement. Not
/// generic, so that an inline access costs no generic type instantiation.
final class AccessCancellation: Sendable {
    private struct State {
        var isCancelled = false
        var running: InterruptHandle?
    }

    private let state = Locked(State())
    /// Set by ``cancel()``; read by the connection's lock waits and steps.
    let flag = CancellationFlag()

    var isCancelled: Bool { state.withLock { $0.isCancelled } }

    func cancel() {
        flag.set()
        state.withLock { state in
            state.isCancelled = true
            state.running?.interrupt()
        }
    }

    /// Runs `body` on the calling thread, whose connection is `database`,
    /// unless cancelled first; an interruption caused by cancelling throws
    /// `CancellationError`.
    func run<T>(on database: Database, _ body: (Database) throws -> T) throws -> T {
        let proceed = state.withLock { state in
            guard !state.isCancelled else { return false }
            state.running = database.interruptHandle
            return true
        }
        guard proceed else { throw CancellationError() }
        database.cancellation = flag
        defer {
            database.cancellation = nil
            state.withLock { $0.running = nil }
        }
        do {
            return try body(database)
        } catch {
            throw error.reportingCancellation(isCancelled)
        }
    }
}

extension Error {
    /// `CancellationError` when this is how a cancelled access ends (its
    /// statement interrupted, or its wait for a lock cut short) and it was
    /// cancelled; the error itself otherwise.
    func reportingCancellation(_ cancelled: Bool) -> any Error {
        cancelled && (ResultCode.interrupt ~= self || ResultCode.busy ~= self) ? CancellationError() : self
    }
}
