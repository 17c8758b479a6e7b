import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// Ctrl-C (`SIGINT`) and `SIGTERM` as an event to await, instead of the
/// default action that kills the process before it can restore the
/// terminal or close the database.
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

    /// Turns off the default action of `SIGINT` and `SIGTERM` for the rest
    /// of the process and starts listening for them.
    init() {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        self.continuation = continuation
        sources = [SIGINT, SIGTERM].map { signalNumber in
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
