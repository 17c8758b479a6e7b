/// One connection with serial access: an in-memory database (the default,
/// what tests use) or a file.
///
/// Every ``write(_:)`` and ``read(_:)`` runs on the queue's own thread, one
/// at a time. Only on an in-memory queue may a write that finds the queue
/// idle run on the calling task's thread (see
/// ``Configuration/writesOnCallerThread``): a file's rollback journal may
/// wait for another process at `COMMIT`.
///
/// ```swift
/// let queue = try DatabaseQueue()   // in memory
/// try await queue.write { db in
///     try db.execute(sql: "CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT)")
///     try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: ["Arthur"])
/// }
/// let count = try await queue.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
/// ```
public final class DatabaseQueue: DatabaseWriter {
    /// The database path; `:memory:` for an in-memory database.
    public let path: String
    /// The configuration the queue was opened with.
    public let configuration: Configuration
    let jobs: JobQueue
    private let taskExecutor: ConnectionExecutor
    /// The observations of this database, their index and their fetches.
    let observations: ObservationCenter
    private let backgroundClose = BackgroundClose()

    /// The queue's own thread: a task that prefers it runs its reads too
    /// inline there, not only its writes.
    public var writerExecutor: any TaskExecutor { taskExecutor }
    /// Detects other connections' commits, when configured for a file.
    let externalChangeMonitor: ExternalChangeMonitor?

    /// Opens a queue.
    ///
    /// - Parameters:
    ///   - path: a file path, or `:memory:` (the default) for a private
    ///     in-memory database.
    ///   - configuration: open options.
    /// - Throws: ``SQLiteError`` when the file cannot be opened or is not a database.
    ///
    /// ```swift
    /// let queue = try DatabaseQueue()                                // private, in memory
    /// let file = try DatabaseQueue(path: "/var/lib/app/db.sqlite")   // created if missing
    /// ```
    public init(path: String = ":memory:", configuration: Configuration = Configuration()) throws {
        self.path = path
        self.configuration = configuration
        // A private in-memory database never waits for a lock or a disk, so
        // an idle queue lets the caller's thread run a write; a file's
        // rollback journal may wait for another process at `COMMIT`.
        jobs = JobQueue(allowsClaims: path == ":memory:" && configuration.writesOnCallerThread)
        taskExecutor = ConnectionExecutor(queue: jobs)
        let database = try Database(path: path, configuration: configuration)
        let center = ObservationCenter(fetchQueue: jobs, logger: configuration.logger)
        database.changeCollector = ChangeCollector(center: center)
        observations = center
        externalChangeMonitor = try ExternalChangeMonitor.make(
            path: path, configuration: configuration, center: center, writerQueue: jobs, writer: database)
        ConnectionThread.start(name: "dbwatch.queue", queue: jobs, connection: UnsafeTransfer(value: database)) { _ in
            // The connection was opened above; reopening happens only after close, which refuses jobs.
            throw SQLiteError.databaseClosed
        }
    }

    deinit {
        syncClose()
    }

    /// On the queue's connection; reads wait meanwhile.
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await jobs.perform(claimingIdleConnection: true) { db in try db.writeJob(body) }
    }

    /// On the queue's own thread, never the caller's.
    public func writeWithoutTransaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws
        -> T
    {
        try await jobs.perform { db in try db.writeJobWithoutTransaction(body) }
    }

    /// On the queue's connection, in a transaction made read-only with
    /// `PRAGMA query_only`; writes wait meanwhile.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await jobs.perform { db in try db.inReadOnlyTransaction { try body(db) } }
    }

    /// Closes the queue's one connection, blocking the calling thread: see
    /// ``DatabaseWriter/syncClose()``.
    public func syncClose() {
        externalChangeMonitor?.stop()
        // Queued jobs first: the refetches of commits made before the close
        // still deliver their values.
        jobs.close()
        jobs.waitForWorkersUnlessCalledFromOne(shuttingDownAt: JobQueue.deadline(after: configuration.closeGracePeriod))
        observations.close()
    }

    /// Closes as told on ``DatabaseWriter/close()``: ``syncClose()`` on a
    /// thread of its own, which the calling task awaits.
    public func close() async {
        await backgroundClose.run(name: "dbwatch.close") { [self] in syncClose() }
    }

    // MARK: - Observation
    // What each member does is documented once, on ``DatabaseWriter``.

    /// Observes `request` on this database; see ``DatabaseWriter/observe(_:options:)``.
    public func observe<R: Queryable>(_ request: R, options: ObservationOptions) -> QueryObservation<R> {
        observations.observe(request, options: options)
    }

    /// See ``DatabaseWriter/statistics(for:)``.
    public func statistics<R: Queryable>(for request: R) -> ObservationStatistics? {
        observations.statistics(for: request)
    }

    /// See ``DatabaseWriter/explain(_:)``.
    public func explain<R: Queryable>(_ request: R) async throws -> QueryExplanation {
        try await observations.explain(request)
    }

    /// See ``DatabaseWriter/observationCount``.
    public var observationCount: Int { observations.count }

    /// See ``DatabaseWriter/subscriberCount``.
    public var subscriberCount: Int { observations.subscriberCount }

    /// See ``DatabaseWriter/fetchDurations``.
    public var fetchDurations: FetchDurations { jobs.fetchDurations.snapshot }
}
