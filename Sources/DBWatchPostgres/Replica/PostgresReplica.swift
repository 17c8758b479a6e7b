import DBWatch
import Logging
import PostgresNIO
import ServiceLifecycle

/// A live SQLite replica of PostgreSQL tables: it copies them into a
/// DBWatch database, then applies every PostgreSQL transaction that changes
/// them whole, as PostgreSQL streams it, so live queries on the replica see
/// each change as if it had been written locally. A ServiceLifecycle
/// `Service`.
///
/// ```swift
/// let client = PostgresClient(configuration: postgresConfiguration)
/// let server = PostgresReplica.Server(
///     host: "db.internal", username: "replica", password: secret, database: "app", tls: .disable)
/// let pool = try DatabasePool(path: "replica.sqlite")
/// let replica = PostgresReplica(
///     client: client, server: server, database: pool,
///     configuration: .init(tables: ["player", "team"]), logger: logger)
/// let services = ServiceGroup(services: [client, replica], logger: logger)
/// try await services.run()
/// ```
///
/// How it stays exact:
/// - The first run creates a logical replication slot (`dbwatch_<id>`,
///   with PostgreSQL's `pgoutput`) *before* it copies the tables in one
///   `REPEATABLE READ` snapshot. Every transaction committed after the
///   slot's start is in the change feed; those the snapshot already saw are
///   recognized by their transaction id (the snapshot's `xmin`, `xmax` and
///   transactions in progress, stored with the copy) and skipped, so none
///   is applied twice.
/// - Each PostgreSQL transaction is applied whole in one SQLite
///   transaction (transactions that arrive together, a backlog, share
///   one), and the position after the last commit is stored in that same
///   transaction (table `dbwatch_replica`). The position is confirmed to
///   PostgreSQL only after SQLite committed, so a crash at any point loses
///   nothing; on restart, transactions at or before the stored position
///   are skipped, so nothing is applied twice.
public final class PostgresReplica: Service, Sendable {
    let client: PostgresClient
    let server: Server
    let store: ReplicaStore
    let configuration: Configuration
    let logger: Logger
    /// `Locked`, not `Mutex`: the thread sanitizer cannot see a `Mutex` on
    /// Linux, and reports the accesses it guards as races.
    let state = Locked(ReplicaState())

    /// A replica of `configuration`'s tables from `server`'s database into
    /// `database`: the replica opens its own connections to `server` (one
    /// for the catalog and the copy, one replication connection for the
    /// change feed), so that it reconnects as soon as PostgreSQL is back;
    /// `client` (the same database) serves ``remove()`` and
    /// ``currentPosition(of:)``. Nothing happens before ``run()``; the
    /// client must be running (`client.run()`, or both in one
    /// `ServiceGroup`).
    public init(
        client: PostgresClient, server: Server, database: any DatabaseWriter, configuration: Configuration,
        logger: Logger
    ) {
        self.client = client
        self.server = server
        self.store = ReplicaStore(database: database)
        self.configuration = configuration
        self.logger = logger
    }

    /// What the replica is doing now.
    public var status: Status { state.withLock { $0.status } }

    /// Copies the tables if the database holds no replica of them yet, then
    /// follows the change feed until the task is cancelled or the service
    /// group shuts down (it returns; the slot is kept, and the next run
    /// goes on from where this one stopped) or a fatal ``ReplicaError``
    /// (it throws). While PostgreSQL cannot be reached, it retries with
    /// backoff, and the database keeps the last state applied.
    public func run() async throws {
        try validateConfiguration()
        let alreadyRunning = state.withLock { state in
            defer { state.isRunning = true }
            return state.isRunning
        }
        guard !alreadyRunning else {
            throw ReplicaError(.invalidConfiguration, "run() was called while the replica runs")
        }
        defer { state.withLock { $0.isRunning = false } }
        do {
            try await cancelWhenGracefulShutdown { try await self.runWithRetries() }
            logger.info("replica stopped")
            stop(phase: .stopped, error: nil)
        } catch let error as ReplicaError {
            logger.error("replica stopped", metadata: ["dbwatch.error": "\(error)"])
            stop(phase: .failed, error: error)
            throw error
        } catch {
            if Task.isCancelled || error is CancellationError {
                logger.info("replica stopped")
                stop(phase: .stopped, error: nil)
                return
            }
            let replicaError = ReplicaError(classifying: error)
            logger.error("replica stopped", metadata: ["dbwatch.error": "\(error)"])
            stop(phase: .failed, error: replicaError)
            throw replicaError
        }
    }

    private func validateConfiguration() throws(ReplicaError) {
        if configuration.publication != nil, !configuration.tables.isEmpty {
            throw ReplicaError(.invalidConfiguration, "give tables or a publication, not both")
        }
        if configuration.publication == nil, configuration.tables.isEmpty {
            throw ReplicaError(.invalidConfiguration, "no table to replicate")
        }
        if configuration.rowsPerCopyTransaction < 1 {
            throw ReplicaError(.invalidConfiguration, "rowsPerCopyTransaction must be positive")
        }
    }

    /// Follows the source through connection failures.
    private func runWithRetries() async throws {
        var delay = configuration.initialRetryDelay
        while true {
            try Task.checkCancellation()
            do {
                // A connection of its own, not one of the client's pool:
                // after a run of refused connections, the pool waits
                // longer and longer (up to a minute) before it tries again.
                try await withSourceConnection { connection in
                    let source = try await SourceConnection(
                        connection, timeout: self.configuration.queryTimeout, logger: self.logger)
                    delay = self.configuration.initialRetryDelay
                    self.update { $0.isConnected = true }
                    do {
                        try await self.follow(source)
                    } catch {
                        await source.release()
                        throw error
                    }
                }
            } catch {
                try Task.checkCancellation()
                let replicaError = ReplicaError(classifying: error)
                guard replicaError.isRetried else { throw replicaError }
                logger.warning(
                    "replica lost PostgreSQL; retrying",
                    metadata: ["dbwatch.error": "\(replicaError)", "dbwatch.delay": "\(delay)"])
                update {
                    $0.isConnected = false
                    $0.lastError = replicaError
                    $0.reconnects += 1
                    $0.caughtUpSinceConnecting = false
                }
                try await Task.sleep(for: delay)
                delay = min(delay * 2, configuration.maximumRetryDelay)
            }
        }
    }

    func update(_ change: (inout Status) -> Void) {
        state.withLock { change(&$0.status) }
    }

    func publishApplied(_ position: LogSequenceNumber) {
        let reached = state.withLock { $0.apply(position) }
        for continuation in reached { continuation.resume() }
    }

    private func stop(phase: Status.Phase, error: ReplicaError?) {
        let waiters = state.withLock { state in
            state.status.phase = phase
            state.status.isConnected = false
            if let error { state.status.lastError = error }
            return state.takeWaiters()
        }
        let stopped = ReplicaError(.stopped, "the replica stopped" + (error.map { ": \($0)" } ?? ""))
        for continuation in waiters { continuation.resume(throwing: stopped) }
    }
}
