import Dispatch
@testable import DBWatch

/// A one-shot gate for ordering test steps: tasks `await wait()` until
/// someone calls `open()`; database closures (on connection threads) use
/// `blockingWait()`.
final class Gate: Sendable {
    private let state = Locked<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    private let semaphore = DispatchSemaphore(value: 0)

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.isOpen else { return [] }
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
        semaphore.signal()
    }

    var isOpen: Bool { state.withLock { $0.isOpen } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Blocks the calling thread (never a cooperative one: see
    /// ``DedicatedThreadExecutor``) until open, at most `seconds`.
    @discardableResult
    func blockingWait(seconds: Double = defaultTestTimeout) -> Bool {
        if isOpen { return true }
        let ok = semaphore.wait(timeout: .now() + seconds) == .success
        if ok { semaphore.signal() }
        return ok
    }
}
