import ArgumentParser
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// Ctrl-C (`SIGINT`), `SIGTERM` and `SIGHUP` (the terminal closed) as an
/// event to await, instead of the default action that kills the process
/// before it can restore the terminal or close the database.
///
/// Create it before printing anything, so that a signal is never lost nor
/// fatal; await it in a task of its own:
///
/// ```swift
/// let interrupt = InterruptSignal()
/// group.addTask {
///     if await interrupt.wait() != nil { stop() }   // nil: cancelled
/// }
/// ```
final class InterruptSignal: @unchecked Sendable {  // the sources are set in init and only cancelled later
    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation

    /// Turns off the default action of `SIGINT`, `SIGTERM` and `SIGHUP`
    /// for the rest of the process and starts listening for them.
    init() {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        self.continuation = continuation
        sources = [SIGINT, SIGTERM, SIGHUP].map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { continuation.yield(signalNumber) }
            source.resume()
            return source
        }
    }

    deinit {
        for source in sources { source.cancel() }
        continuation.finish()
    }

    /// Returns the first signal received, or `nil` when the calling task is
    /// cancelled first. Call it from one task only.
    func wait() async -> Int32? {
        let continuation = self.continuation
        return await withTaskCancellationHandler {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        } onCancel: {
            continuation.finish()
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

/// The command was stopped by Ctrl-C (`SIGINT`) or `SIGTERM` before its
/// work was done (exit 130).
struct Interrupted: Error, CustomStringConvertible, Sendable {
    /// The signal received.
    let signal: Int32

    var description: String { "interrupted" }
}
