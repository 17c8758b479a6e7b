/// One database access queued for a connection thread: it runs the
/// access's closure there and resumes the waiting caller with its result.
final class AccessJob<T: Sendable>: ConnectionJob {
    private let body: @Sendable (Database) throws -> T
    private let continuation = Locked<CheckedContinuation<T, any Error>?>(nil)
    private let access = AccessCancellation()

    init(_ body: @escaping @Sendable (Database) throws -> T) {
        self.body = body
    }

    /// Stores the continuation. Returns `false` (after resuming it with
    /// `CancellationError`) when the task was already cancelled.
    func start(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        if access.isCancelled {
            continuation.resume(throwing: CancellationError())
            return false
        }
        self.continuation.withLock { $0 = continuation }
        return true
    }

    func cancel() {
        access.cancel()
    }

    var cancellation: CancellationFlag? { access.flag }

    func run(on database: Database) {
        let waiting = continuation.withLock { $0 != nil }
        guard waiting else { return }
        resume(with: Result { try access.run(on: database, body) })
    }

    func fail(with error: any Error) {
        resume(with: .failure(error))
    }

    private func resume(with result: Result<T, any Error>) {
        let continuation = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        continuation?.resume(with: result)
    }
}
