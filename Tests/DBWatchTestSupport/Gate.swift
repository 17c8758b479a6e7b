import Dispatch

/// A one-shot gate for ordering test steps: tasks `await wait()` until
/// someone calls `open()`; code on threads of its own (a database
/// connection's) uses `blockingWait()`.
///
/// ```swift
/// let started = Gate()
/// Task { started.open() }
/// try await withTimeout { await started.wait() }
/// ```
public final class Gate: Sendable {
    private let state = Protected<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    private let semaphore = DispatchSemaphore(value: 0)

    /// A closed gate.
    public init() {}

    /// Opens the gate: wakes every waiter, and lets later waits pass.
    public func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.isOpen else { return [] }
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
        semaphore.signal()
    }

    /// Whether ``open()`` was called.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Waits until the gate is open (wrap it in ``withTimeout(seconds:_:)``).
    public func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Blocks the calling thread (never a cooperative one) until open, at
    /// most `seconds`; returns whether it opened.
    @discardableResult
    public func blockingWait(seconds: Double = defaultTestTimeout) -> Bool {
        if isOpen { return true }
        let ok = semaphore.wait(timeout: .now() + seconds) == .success
        if ok { semaphore.signal() }
        return ok
    }
}
