import Synchronization

/// Tells the user, once, that the command waits for another connection's
/// lock, since it prints nothing else meanwhile (up to the 5-second busy
/// timeout, twice). For `watch`, only while opening: a wait during a live
/// screen is short and would break the screen.
///
/// ```swift
/// let notice = LockWaitNotice(path: path)
/// configuration.lockWaitWillStart = notice.handler
/// let pool = try DatabasePool(path: path, configuration: configuration)
/// notice.stop()
/// ```
final class LockWaitNotice: Sendable {
    private static let waiting = 0
    private static let printed = 1
    private static let stopped = 2

    private let path: String
    private let state = Atomic<Int>(LockWaitNotice.waiting)

    init(path: String) {
        self.path = path
    }

    /// The handler for ``Configuration/lockWaitWillStart``.
    var handler: @Sendable () -> Void {
        { [self] in
            if state.compareExchange(expected: Self.waiting, desired: Self.printed, ordering: .relaxed).exchanged {
                Output.standardError(
                    "dbwatch: waiting for another connection's lock on \(CellText.sanitized(path)) (Ctrl-C to stop)\n")
            }
        }
    }

    /// Prints nothing from now on.
    func stop() {
        state.store(Self.stopped, ordering: .relaxed)
    }
}
