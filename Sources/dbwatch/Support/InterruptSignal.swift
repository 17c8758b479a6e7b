import ArgumentParser
import DBWatch
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// Ctrl-C (`SIGINT`), `SIGTERM` and `SIGHUP` (the terminal closed) as an
/// event to await, instead of the default action that kills the process
/// before it can restore the terminal or close the database.
///
/// Create it before printing anything, so that a signal is never lost nor
/// fatal; await it in a task of its own. Once a signal arrived, every
/// `wait()`, earlier or later, returns it: a command interrupted while it
/// opens the database stops there, and one that finished opening anyway
/// stops as soon as it waits again.
///
/// A statement that does not stop must not keep the process alive: with
/// `exitStatus`, the process exits with it ``gracePeriod`` after the first
/// signal if it is still running then (see ``init(exitStatus:)``).
///
/// ```swift
/// let interrupt = InterruptSignal(exitStatus: .interrupted)
/// group.addTask {
///     if await interrupt.wait() != nil { stop() }   // nil: cancelled
/// }
/// ```
final class InterruptSignal: Sendable {
    private struct State {
        var received: Int32?
        var waiters: [Int: CheckedContinuation<Int32?, Never>] = [:]
        var nextWaiter = 0
    }

    /// The state, shared with the sources' handlers. `Locked`, not
    /// `Mutex`: the thread sanitizer cannot see a `Mutex` on Linux, and
    /// reported the accesses it guards as races.
    private final class Shared: Sendable {
        let state = Locked(State())
        /// The status of a process that is still running ``gracePeriod`` after a signal.
        let exitStatus: ExitStatus?
        /// What did not stop, and what follows from the exit, in its message.
        let stalled: String
        let consequence: String?

        init(exitStatus: ExitStatus?, stalled: String, consequence: String?) {
            self.exitStatus = exitStatus
            self.stalled = stalled
            self.consequence = consequence
        }
    }

    /// How long after a signal a command may take to stop its statement
    /// and exit by itself, before it exits without waiting for it.
    static let gracePeriod: Duration = .seconds(2)

    /// The sources are set in init and only cancelled in deinit.
    private nonisolated(unsafe) let sources: [any DispatchSourceSignal]
    private let shared: Shared

    /// Turns off the default action of `SIGINT`, `SIGTERM` and `SIGHUP`
    /// for the rest of the process and starts listening for them.
    ///
    /// - Parameter exitStatus: when given, a process still running
    ///   ``gracePeriod`` after the first signal (a statement that did not
    ///   stop, a close that waits for it) says so on standard error and
    ///   exits with this status, without waiting further. SQLite's journal
    ///   keeps the database intact: an unfinished transaction rolls back.
    /// - Parameters:
    ///   - stalled: what did not stop, as that message says it ("the query
    ///     did not stop …").
    ///   - consequence: what the exit means for the database, added to the message.
    ///   - hangUp: whether `SIGHUP` stops too (`serve` re-reads its token
    ///     files on it instead, with ``HangUpSignal``).
    init(
        exitStatus: ExitStatus? = nil, stalled: String = "the query", consequence: String? = nil, hangUp: Bool = true
    ) {
        let shared = Shared(exitStatus: exitStatus, stalled: stalled, consequence: consequence)
        self.shared = shared
        let registered = DispatchGroup()
        sources = [SIGINT, SIGTERM, hangUp ? SIGHUP : nil].compactMap { $0 }.map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { InterruptSignal.deliver(signalNumber, to: shared) }
            registered.enter()
            source.setRegistrationHandler { registered.leave() }
            source.resume()
            return source
        }
        // Dispatch installs its signal handler later, on its own thread;
        // until then a signal finds SIG_IGN and is lost.
        _ = registered.wait(timeout: .now() + 5)
    }

    deinit {
        for source in sources { source.cancel() }
    }

    private static func deliver(_ signalNumber: Int32, to shared: Shared) {
        let (waiters, isFirst) = shared.state.withLock { state in
            let isFirst = state.received == nil
            if isFirst { state.received = signalNumber }
            defer { state.waiters = [:] }
            return (Array(state.waiters.values), isFirst)
        }
        for waiter in waiters { waiter.resume(returning: signalNumber) }
        if isFirst, let status = shared.exitStatus {
            let grace = gracePeriod.components
            DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Int(grace.seconds))) {
                exitNow(status, stalled: shared.stalled, consequence: shared.consequence)
            }
        }
    }

    /// Ends the process with `status` at once: the running statement did
    /// not stop within the grace period. `_exit`, not `exit`: other threads
    /// are still running, and nothing is left to flush.
    private static func exitNow(_ status: ExitStatus, stalled: String, consequence: String?) -> Never {
        if isatty(STDOUT_FILENO) == 1 { Output.standardOutput(ANSI.reset + "\n") }
        Output.standardError(
            "dbwatch: \(stalled) did not stop within \(gracePeriod.components.seconds) seconds of the signal; "
                + "exiting without waiting for it\(consequence.map { ": " + $0 } ?? "")\n")
        _exit(status.rawValue)
    }

    /// Returns the first signal received (at once if one already was), or
    /// `nil` when the calling task is cancelled first.
    func wait() async -> Int32? {
        let id = shared.state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now: Int32?? = shared.state.withLock { state in
                    if let received = state.received { return .some(received) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = shared.state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: nil)
        }
    }
}

extension InterruptSignal {
    /// Runs `operation` until it ends or a signal arrives. A signal cancels
    /// it, which interrupts its running statement (a migration rolls back),
    /// and waits for it to stop; then throws ``Interrupted``, unless the
    /// operation finished anyway (its value is returned) or reported its
    /// own failure (its `ExitCode` is rethrown).
    ///
    /// ```swift
    /// let plan = try await interrupt.cancellingOnSignal { try await migrator.dryRun(queue) }
    /// ```
    func cancellingOnSignal<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let work = Task { try await operation() }
        let signal = await withTaskCancellationHandler {
            await withTaskGroup(of: Int32?.self) { group in
                group.addTask { await self.wait() }
                group.addTask {
                    _ = await work.result
                    return nil
                }
                let first = await group.next() ?? nil
                // Before leaving the group, which waits for the child that awaits the work.
                if first != nil { work.cancel() }
                group.cancelAll()
                return first
            }
        } onCancel: {
            work.cancel()
        }
        guard let signal else { return try await work.value }
        switch await work.result {
        case .success(let value):
            return value
        case .failure(let exitCode as ExitCode):
            throw exitCode
        case .failure:
            throw Interrupted(signal: signal)
        }
    }
}

extension InterruptSignal {
    /// Opens the database at `path` with `open` (for `demo`, migrating and
    /// seeding it too) until it ends or a signal arrives, which ends a wait
    /// for another connection's lock. A signal exits 130 with "interrupted
    /// while opening"; any other failure exits as ``ErrorReport`` says.
    ///
    /// ```swift
    /// let pool = try await interrupt.opening(path, readOnlyCommand: true) { try DatabasePool(path: path) }
    /// ```
    func opening<T: Sendable>(
        _ path: String, readOnlyCommand: Bool = false, _ open: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        do {
            return try await cancellingOnSignal(open)
        } catch is Interrupted {
            Output.standardError("dbwatch: interrupted while opening \(CellText.sanitized(path))\n")
            throw ExitStatus.interrupted.exitCode
        } catch {
            throw ErrorReport.exit(for: error, readOnlyCommand: readOnlyCommand)
        }
    }
}

/// The command was stopped by Ctrl-C (`SIGINT`) or `SIGTERM` before its
/// work was done (exit 130).
struct Interrupted: Error, CustomStringConvertible, Sendable {
    /// The signal received.
    let signal: Int32

    var description: String { "interrupted" }
}
