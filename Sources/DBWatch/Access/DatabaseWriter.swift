/// What ``DatabaseQueue`` and ``DatabasePool`` have in common: reads, writes
/// and observations. Write code against it to accept either.
///
/// Every access runs on a connection's own thread, where SQLite's waits for
/// locks and disk syncs block no cooperative thread; an idle writer may
/// lend its connection to the calling task's thread for one write instead
/// (see ``Configuration/writesOnCallerThread``). Cancelling the calling
/// task skips an access that has not started, and interrupts the running
/// statement of one that has (`sqlite3_interrupt`): the access throws
/// `CancellationError`.
///
/// ```swift
/// func playerCount(in database: some DatabaseWriter) async throws -> Int {
///     try await database.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") ?? 0 }
/// }
/// ```
public protocol DatabaseWriter: AnyObject, Sendable {
    /// The database path (`:memory:` for an in-memory queue).
    var path: String { get }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction on the writer
    /// connection and returns its value. If `body` throws, the transaction
    /// rolls back and the error is rethrown. When the writer is idle it may
    /// run on the calling task's thread (see
    /// ``Configuration/writesOnCallerThread``).
    ///
    /// ```swift
    /// let id = try await database.write { db in
    ///     try db.execute(sql: "INSERT INTO player (name) VALUES ('Barbara')")
    ///     return db.lastInsertedRowID
    /// }
    /// ```
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T

    /// Runs `body` on the writer connection without opening a transaction:
    /// for statements that cannot run inside one (`VACUUM`, `PRAGMA
    /// foreign_keys`) or work that manages its own transactions.
    func writeWithoutTransaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T

    /// A task executor on the writer connection's thread, for tasks that
    /// write a lot in small transactions (imports, ingestion) where an
    /// ordinary task's writes would not run on its own thread: on a file
    /// ``DatabaseQueue``, with ``Configuration/writesOnCallerThread`` off,
    /// or while other tasks keep the writer busy.
    ///
    /// A task that prefers it runs its code on that thread, and its
    /// ``write(_:)`` calls run there inline instead of queueing a job and
    /// waiting for it: no thread hop, no wake-up, and SQLite runs only on
    /// the writer's thread. The price: while the task runs code of its own (or awaits nothing), the
    /// writer runs nothing else, so keep non-database work out of such a
    /// task. An access runs inline only when no other job is waiting, so
    /// queued writes are never overtaken.
    ///
    /// ```swift
    /// try await withTaskExecutorPreference(database.writerExecutor) {
    ///     for event in events {
    ///         try await database.write { db in
    ///             try db.execute(sql: "INSERT INTO event (payload) VALUES (?)", arguments: [event])
    ///         }
    ///     }
    /// }
    /// ```
    var writerExecutor: any TaskExecutor { get }

    /// Runs `body` in a read-only transaction on a consistent snapshot:
    /// writes inside fail with ``ResultCode/readOnly``.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T

    /// Closes every connection after the jobs already running or queued,
    /// and waits, for at most ``Configuration/closeGracePeriod``: then the
    /// statements still running are interrupted, and the jobs that did not
    /// start fail, with ``SQLiteError`` "database is closed" (a write still
    /// running rolls back). Later calls throw ``ResultCode/misuse``
    /// ("database is closed"), and every observation ends: its last element
    /// is that error, after the values of commits made before the close
    /// whose refetches ended within the grace period. Releasing the last
    /// reference closes too (as ``syncClose()``).
    ///
    /// The close runs on a thread of its own (one for all the callers
    /// closing at the same time), so the calling task's thread is not held
    /// for the grace period; this returns when it is done. Cancelling the
    /// calling task does not shorten it.
    ///
    /// ```swift
    /// try await app.runService()   // the server stopped: its streams ended
    /// await database.close()
    /// ```
    func close() async

    /// ``close()`` for code that cannot `await`: the same close, run on the
    /// calling thread, which it blocks until the close is done (at most
    /// ``Configuration/closeGracePeriod`` plus the time to close the
    /// connections). Named like SwiftNIO's `syncShutdownGracefully()`: in
    /// async code, use `await close()`, which holds no cooperative thread.
    ///
    /// ```swift
    /// deinit { database.syncClose() }   // a class owning the database: no task to await in
    /// ```
    func syncClose()

    /// Observes `request`: its current value at once, then a new value after
    /// every commit that can change it. See ``QueryObservation``.
    func observe<R: Queryable>(_ request: R, options: ObservationOptions) -> QueryObservation<R>

    /// The counters of the running observation of `request`, or `nil` when
    /// none runs.
    func statistics<R: Queryable>(for request: R) -> ObservationStatistics?

    /// Fetches `request` once and tells which tables and columns its
    /// observation watches.
    ///
    /// ```swift
    /// let explanation = try await database.explain(TopPlayers())
    /// logger.info("\(explanation)")  // Observes main.player: columns id, name, score.
    /// ```
    func explain<R: Queryable>(_ request: R) async throws -> QueryExplanation

    /// The number of running observations (identical requests count once).
    var observationCount: Int { get }

    /// The number of subscriptions of all running observations: each loop
    /// over an observation counts, also when identical requests share one
    /// observation (``observationCount`` counts those once). A
    /// ``LiveQuery`` counts as one, whatever its own subscribers. Returns
    /// to zero when every loop has ended: a check for leaked subscriptions.
    ///
    /// ```swift
    /// assert(database.subscriberCount == 0)   // no stream left behind
    /// ```
    var subscriberCount: Int { get }

    /// How long the observations' fetches took since the database opened,
    /// counted in fixed buckets: what a metrics backend reports as a
    /// histogram (DBWatchMetrics' `dbwatch_fetch_duration_seconds`).
    /// Counting costs each fetch two relaxed atomic additions.
    ///
    /// ```swift
    /// let durations = database.fetchDurations
    /// logger.info("\(durations.count) fetches, \(durations.total) in all")
    /// ```
    var fetchDurations: FetchDurations { get }
}

extension DatabaseWriter {
    /// Fetches `request` once: its value in the committed state now, read
    /// in a read-only transaction as an observation's fetch is (on a
    /// pool's reader, so writes go on meanwhile). For one answer without
    /// observing; a fetch error is thrown as is.
    ///
    /// ```swift
    /// let players = try await pool.value(of: TopPlayers())   // [Player], fetched now
    /// ```
    ///
    /// - Parameter request: the request to fetch.
    /// - Returns: the value `request.fetch(_:)` returns.
    public func value<R: Queryable>(of request: R) async throws -> R.Value {
        try await read { db in try request.fetch(db) }
    }

    /// Observes `request` with default options (no rate limit).
    ///
    /// ```swift
    /// for try await players in queue.observe(TopPlayers()) { … }
    /// ```
    public func observe<R: Queryable>(_ request: R) -> QueryObservation<R> {
        observe(request, options: ObservationOptions())
    }
}
