import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// `SIGHUP` as a sequence of events: `serve` with a token or key file
/// re-reads it on each, instead of stopping (``InterruptSignal`` is then
/// made without `SIGHUP`).
///
/// ```swift
/// let hangUps = HangUpSignal()
/// for await _ in hangUps.events { await access.reload() }
/// ```
final class HangUpSignal: Sendable {
    /// One element per `SIGHUP` received; signals that arrive while the
    /// previous one is handled count once.
    let events: AsyncStream<Void>
    /// Set in init, cancelled in deinit only.
    private nonisolated(unsafe) let source: any DispatchSourceSignal
    private let continuation: AsyncStream<Void>.Continuation

    /// Turns off `SIGHUP`'s default action and listens for it.
    init() {
        let (events, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.events = events
        self.continuation = continuation
        signal(SIGHUP, SIG_IGN)
        let registered = DispatchSemaphore(value: 0)
        source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        source.setEventHandler { continuation.yield() }
        source.setRegistrationHandler { registered.signal() }
        source.resume()
        // As InterruptSignal: until dispatch installs its handler, a signal is lost.
        _ = registered.wait(timeout: .now() + 5)
    }

    deinit {
        source.cancel()
        continuation.finish()
    }
}
