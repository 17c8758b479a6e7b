import PostgresNIO

extension PostgresReplica {
    /// The current end of PostgreSQL's log: after a transaction commits,
    /// this position is at or after its commit, so a replica that has
    /// applied it shows the transaction.
    ///
    /// ```swift
    /// try await client.query("UPDATE player SET score = score + 1 WHERE id = \(id)")
    /// let position = try await PostgresReplica.currentPosition(of: client)
    /// try await replica.waitUntilApplied(position, timeout: .seconds(2))
    /// // The replica's next live value includes the update.
    /// ```
    public static func currentPosition(of client: PostgresClient) async throws -> LogSequenceNumber {
        let rows = try await client.query("SELECT pg_current_wal_insert_lsn()::text")
        for try await text in rows.decode(String.self) {
            if let position = LogSequenceNumber(text) { return position }
        }
        throw ReplicaError(.unreadableChange, "PostgreSQL gave no log position")
    }

    /// Waits until the replica has applied every transaction committed up
    /// to `position` (and committed it in SQLite, where observations see
    /// it). Returns at once when it already has.
    ///
    /// - Throws: ``ReplicaError`` `timedOut` after `timeout`, `stopped` when
    ///   the replica stops or fails first; `CancellationError` when the
    ///   calling task is cancelled.
    public func waitUntilApplied(_ position: LogSequenceNumber, timeout: Duration) async throws {
        let id: UInt64? = state.withLock { state in
            if let applied = state.status.appliedPosition, applied >= position { return nil }
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        guard let id else { return }
        let stopped = ReplicaError(.stopped, "the replica stopped before it reached \(position)")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        let outcome: Result<Void, any Error>? = self.state.withLock { state in
                            if Task.isCancelled { return .failure(CancellationError()) }
                            if let applied = state.status.appliedPosition, applied >= position { return .success(()) }
                            if state.status.phase == .failed || state.status.phase == .stopped {
                                return .failure(stopped)
                            }
                            state.waiters[id] = ReplicaState.Waiter(position: position, continuation: continuation)
                            return nil
                        }
                        if let outcome { continuation.resume(with: outcome) }
                    }
                } onCancel: {
                    self.state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(
                        throwing: CancellationError())
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw ReplicaError(.timedOut, "the replica did not reach \(position) within \(timeout)")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }
}
