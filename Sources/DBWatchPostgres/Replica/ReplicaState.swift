/// What a replica shares between its running task and its readers: the
/// status, and the tasks waiting for a position.
struct ReplicaState {
    var status = PostgresReplica.Status()
    var isRunning = false
    var waiters: [UInt64: Waiter] = [:]
    var nextWaiterID: UInt64 = 0

    /// A task waiting until the replica reaches `position`.
    struct Waiter {
        var position: LogSequenceNumber
        var continuation: CheckedContinuation<Void, any Error>
    }

    /// Records a new applied position and takes the waiters it satisfies,
    /// to resume outside the lock.
    mutating func apply(_ position: LogSequenceNumber) -> [CheckedContinuation<Void, any Error>] {
        if let current = status.appliedPosition, current >= position { return [] }
        status.appliedPosition = position
        let reached = waiters.filter { $0.value.position <= position }
        for id in reached.keys { waiters[id] = nil }
        return reached.values.map(\.continuation)
    }

    /// Takes every waiter, to fail outside the lock.
    mutating func takeWaiters() -> [CheckedContinuation<Void, any Error>] {
        defer { waiters = [:] }
        return waiters.values.map(\.continuation)
    }
}
