/// A file database in WAL mode: one writer connection and several reader
/// connections that read in parallel with the writer, each on a snapshot.
///
/// ```swift
/// let pool = try DatabasePool(path: "/var/lib/app/db.sqlite")
/// try await pool.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('Arthur')") }
/// async let a = pool.read { db in try db.fetchAll(Player.self, sql: "SELECT * FROM player") }
/// async let b = pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
/// ```
public final class DatabasePool: DatabaseWriter {
    /// The database file path.
    ///
    /// ```swift
    /// let pool = try DatabasePool(path: "/var/lib/app/db.sqlite")
    /// pool.path   // "/var/lib/app/db.sqlite"
    /// ```
    public let path: String
    /// The configuration the pool was opened with.
    ///
    /// ```swift
    /// pool.configuration.maximumReaderCount   // 4 unless configured
    /// ```
    public let configuration: Configuration
    let writerJobs: JobQueue
    let readerJobs = JobQueue()
    private let writerTaskExecutor: ConnectionExecutor

    /// Runs a task on the writer connection's thread: its writes run there
    /// inline, without the two thread hops of a queued job, even while
    /// other tasks write or with ``Configuration/writesOnCallerThread`` off.
    /// Reads still go to readers.
    /// Meanwhile, other writes wait while the task runs code of its own;
    /// see ``DatabaseWriter/writerExecutor``.
    ///
    /// ```swift
    /// try await withTaskExecutorPreference(pool.writerExecutor) {
    ///     for name in names {
    ///         try await pool.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: [name]) }
    ///     }
    /// }
    /// ```
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
        close()
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction on the writer and
    /// returns its value; rolls back and rethrows if it throws. Readers keep
    /// reading meanwhile. When the writer is idle, it runs on the calling
    /// task's thread with the writer's connection, without thread hops
    /// (see ``Configuration/writesOnCallerThread``).
    ///
    /// ```swift
    /// try await pool.write { db in try db.execute(sql: "UPDATE player SET score = score + 1") }
    /// ```
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await writerJobs.perform(claimingIdleConnection: true) { db in try db.writeJob(body) }
    }

    /// Runs `body` on the writer without opening a transaction (`VACUUM`,
    /// `PRAGMA wal_checkpoint`, scripts that manage their own transactions).
    ///
    /// ```swift
    /// try await pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
    /// ```
    public func writeWithoutTransaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws
        -> T
    {
        try await writerJobs.perform { db in try db.writeJobWithoutTransaction(body) }
    }

    /// Runs `body` on a reader connection in a transaction on one snapshot:
    /// it sees every transaction committed before it started and none after.
    ///
    /// ```swift
    /// let players = try await pool.read { db in try db.fetchAll(Player.self, sql: "SELECT * FROM player") }
    /// ```
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await readerJobs.perform { db in try db.inReadOnlyTransaction { try body(db) } }
    }

    /// Closes every connection after the jobs already running or queued,
    /// and waits, for at most ``Configuration/closeGracePeriod``: then the
    /// statements still running are interrupted, and the jobs that did not
    /// start fail, with ``SQLiteError`` "database is closed" (a write still
    /// running rolls back). Later calls throw ``ResultCode/misuse``
    /// ("database is closed"), and every observation ends: its last element
    /// is that error, after the values of commits made before the close
    /// whose refetches ended within the grace period.
    ///
    /// ```swift
    /// pool.close()
    /// ```
    public func close() {
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

    /// ``close()`` without blocking the calling task's thread: the close
    /// runs on a thread of its own (one for all the callers closing at the
    /// same time), and this returns when it is done, after at most
    /// ``Configuration/closeGracePeriod`` of work left running. In an
    /// `async` function, `pool.close()` calls this one and needs `await`.
    /// Cancelling the calling task does not shorten it.
    ///
    /// ```swift
    /// try await app.runService()   // the server stopped: its streams ended
    /// await pool.close()
    /// ```
    public func close() async {
        await backgroundClose.run(name: "dbwatch.close") { [self] in close() }
    }

    // MARK: - Observation

    /// Observes `request`: its current value at once, then a new value after
    /// every commit that can change it.
    ///
    /// ```swift
    /// for try await players in database.observe(TopPlayers(), options: ObservationOptions()) { … }
    /// ```
    public func observe<R: Queryable>(_ request: R, options: ObservationOptions) -> QueryObservation<R> {
        observations.observe(request, options: options)
    }

    /// The counters of the running observation of `request`, or `nil`.
    ///
    /// ```swift
    /// let fetches = database.statistics(for: TopPlayers())?.fetches
    /// ```
    public func statistics<R: Queryable>(for request: R) -> ObservationStatistics? {
        observations.statistics(for: request)
    }

    /// Fetches `request` once and tells which tables and columns its
    /// observation watches.
    ///
    /// ```swift
    /// let explanation = try await database.explain(TopPlayers())
    /// logger.info("\(explanation)")  // Observes main.player: columns id, name, score.
    /// ```
    public func explain<R: Queryable>(_ request: R) async throws -> QueryExplanation {
        try await observations.explain(request)
    }

    /// The number of running observations (identical requests count once).
    ///
    /// ```swift
    /// assert(database.observationCount == 0)
    /// ```
    public var observationCount: Int { observations.count }

    /// The number of subscriptions of all running observations: each loop
    /// over an observation counts, also when identical requests share one
    /// observation (``observationCount`` counts those once). A
    /// ``LiveQuery`` counts as one, whatever its own subscribers. Returns
    /// to zero when every loop has ended: a check for leaked subscriptions.
    ///
    /// ```swift
    /// assert(database.subscriberCount == 0)   // every client's stream ended
    /// ```
    public var subscriberCount: Int { observations.subscriberCount }
}
