import Synchronization

/// Set when the task that waits for a job is cancelled; the connection
/// checks it before each step, since `sqlite3_interrupt` only stops a
/// statement that is already running.
final class CancellationFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .relaxed) }

    func set() { value.store(true, ordering: .relaxed) }
}
