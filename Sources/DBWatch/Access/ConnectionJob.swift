/// A unit of work for a connection thread (see ``JobQueue``).
protocol ConnectionJob: AnyObject, Sendable {
    /// Runs on the connection's own thread.
    func run(on database: Database)
    /// The connection could not be opened, or the queue closed before the job ran.
    func fail(with error: any Error)
    /// Set when the job's access is cancelled: the connection that a worker
    /// opens for this job (its first) stops waiting for a lock then.
    var cancellation: CancellationFlag? { get }
}

extension ConnectionJob {
    var cancellation: CancellationFlag? { nil }
}
