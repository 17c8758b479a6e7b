/// A file database in WAL mode: one writer connection and several reader
/// connections that read in parallel with the writer, each on a snapshot.
/// A write that finds the writer idle may run on the calling task's thread
/// (see ``Configuration/writesOnCallerThread``).
///
/// ```swift
/// let pool = try DatabasePool(path: "/var/lib/app/db.sqlite")
/// try await pool.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('Arthur')") }
/// async let a = pool.read { db in try db.fetchAll(Player.self, sql: "SELECT * FROM player") }
/// async let b = pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
/// ```
public final class DatabasePool: DatabaseWriter {
    /// The database file path.
    public let path: String
    /// The configuration the pool was opened with.
    public let configuration: Configuration
    let writerJobs: JobQueue
    let readerJobs = JobQueue()
    private let writerTaskExecutor: ConnectionExecutor

    /// The writer connection's thread: a task that prefers it runs its
    /// writes inline there; its reads still go to the readers.
    public var writerExecutor: any TaskExecutor { writerTaskExecutor }
    /// The observations of this database, their index and their fetches.
    let observations: ObservationCenter
    private let backgroundClose = BackgroundClose()
    /// Detects other connections' commits, when configured for a file.
    let externalChangeMonitor: ExternalChangeMonitor?

    /// Opens a pool, turning on WAL mode and `synchronous = NORMAL`.
    ///
    /// - Parameters:
    ///   - path: a file path (an in-memory database cannot be shared by
    ///     several connections: use ``DatabaseQueue`` for that).
    ///   - configuration: open options; `maximumReaderCount` readers are started.
    /// - Throws: ``SQLiteError`` when the file cannot be opened, is not a
    ///   database, or WAL mode cannot be enabled.
    ///
    /// ```swift
    /// let pool = try DatabasePool(path: "/var/lib/app/db.sqlite")   // created if missing
    /// _ = try DatabasePool(path: ":memory:")                         // throws .misuse: use DatabaseQueue
    /// ```
    public init(path: String, configuration: Configuration = Configuration()) throws {
        if path == ":memory:" || path.isEmpty {
            throw SQLiteError.misuse("a DatabasePool needs a file; use DatabaseQueue for an in-memory database")
        }
        self.path = path
        self.configuration = configuration
        // WAL: once `BEGIN IMMEDIATE` holds the write lock, a write waits for
        // nothing, so the caller's thread may run it (see JobQueue.perform).
        // A read-only pool's writes fail: they need no claim.
        writerJobs = JobQueue(allowsClaims: configuration.writesOnCallerThread && !configuration.readOnly)
        writerTaskExecutor = ConnectionExecutor(queue: writerJobs)
        let writer = try Database(path: path, configuration: configuration)
        let center = ObservationCenter(fetchQueue: readerJobs, logger: configuration.logger)
        writer.changeCollector = ChangeCollector(center: center)
        observations = center
        if !configuration.readOnly {
            let mode: String?
            do {
                mode = try writer.fetchOne(String.self, sql: "PRAGMA journal_mode = WAL")
            } catch let error as SQLiteError where ResultCode.busy ~= error && writer.waitIsCancelled {
                // Its wait for the lock that cancellation ended, as in `Database.init`.
                throw CancellationError()
            }
            guard mode?.lowercased() == "wal" else {
                throw SQLiteError(
                    code: .error, message: "could not enable WAL mode (journal_mode is \(mode ?? "unknown"))")
            }
            try writer.execute(sql: "PRAGMA synchronous = NORMAL")
            try writer.installCheckpointHook()
        }
        externalChangeMonitor = try ExternalChangeMonitor.make(
            path: path, configuration: configuration, center: center, writerQueue: writerJobs, writer: writer)
        ConnectionThread.start(name: "dbwatch.writer", queue: writerJobs, connection: UnsafeTransfer(value: writer)) {
            _ in throw SQLiteError.databaseClosed
        }
        let readerShutdown = readerJobs.shutdown
        // Readers open when first needed: one that would open another file
        // than the writer's (the path replaced since) fails instead.
        let writerFilePath = writer.mainFilePath
        let writerFile = writerFilePath.flatMap(ExternalChangeMonitor.FileIdentity.init(path:))
        for index in 0..<max(1, configuration.maximumReaderCount) {
            ConnectionThread.start(name: "dbwatch.read.\(index)", queue: readerJobs) { cancellation in
                let reader: Database
                do {
                    reader = try Database(
                        path: path, configuration: configuration, readOnly: true, cancellation: cancellation,
                        shutdown: readerShutdown)
                } catch let error as SQLiteError {
                    // A deleted file cannot be opened read-only: say why.
                    if let writerFilePath, let writerFile,
                        ExternalChangeMonitor.FileIdentity(path: writerFilePath) != writerFile
                    {
                        throw DatabaseFileReplacedError(path: writerFilePath)
                    }
                    throw error
                }
                try reader.refuseFile(otherThan: writerFile)
                return reader
            }
        }
    }

    deinit {
        syncClose()
    }

    /// On the writer connection; the readers keep reading meanwhile.
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await writerJobs.perform(claimingIdleConnection: true) { db in try db.writeJob(body) }
    }

    /// On the writer's own thread, never the caller's.
    public func writeWithoutTransaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws
        -> T
    {
        try await writerJobs.perform { db in try db.writeJobWithoutTransaction(body) }
    }

    /// On a reader connection, in parallel with the writer and the other
    /// readers: the snapshot has every transaction committed before it
    /// started and none after.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await readerJobs.perform { db in try db.inReadOnlyTransaction { try body(db) } }
    }

    /// Closes the readers, then the writer, which checkpoints and removes
    /// the WAL file, blocking the calling thread: see
    /// ``DatabaseWriter/syncClose()``.
    public func syncClose() {
        externalChangeMonitor?.stop()
        let deadline = JobQueue.deadline(after: configuration.closeGracePeriod)
        // Readers first: the writer, closing last, checkpoints and removes the WAL file.
        readerJobs.close()
        readerJobs.waitForWorkersUnlessCalledFromOne(shuttingDownAt: deadline)
        writerJobs.close()
        writerJobs.waitForWorkersUnlessCalledFromOne(shuttingDownAt: deadline)
        // Last: the refetches of commits made before the close still
        // deliver their values.
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
    public var fetchDurations: FetchDurations { readerJobs.fetchDurations.snapshot }
}
