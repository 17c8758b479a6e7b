import DBWatch
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// A live SQLite replica of PostgreSQL tables: it copies them into a
/// DBWatch database, then applies every PostgreSQL transaction that changes
/// them as one SQLite transaction, so live queries on the replica see each
/// change as if it had been written locally. A ServiceLifecycle `Service`.
///
/// ```swift
/// let client = PostgresClient(configuration: postgresConfiguration)
/// let pool = try DatabasePool(path: "replica.sqlite")
/// let replica = PostgresReplica(
///     client: client, database: pool,
///     configuration: .init(tables: ["player", "team"]), logger: logger)
/// let services = ServiceGroup(services: [client, replica], logger: logger)
/// try await services.run()
/// ```
public final class PostgresReplica: Service, Sendable {
    let client: PostgresClient
    let database: any DatabaseWriter
    let configuration: Configuration
    let logger: Logger

    /// A replica of `configuration`'s tables from `client`'s database into
    /// `database`. Nothing happens before ``run()``.
    public init(
        client: PostgresClient, database: any DatabaseWriter, configuration: Configuration, logger: Logger
    ) {
        self.client = client
        self.database = database
        self.configuration = configuration
        self.logger = logger
    }

    /// Copies the tables if the database holds no replica of them yet, then
    /// follows the change feed until the task is cancelled or the service
    /// group shuts down (it returns) or a fatal ``ReplicaError`` (it throws).
    public func run() async throws {
        throw ReplicaError(.invalidConfiguration, "not built yet")
    }
}
