import DBWatch
import DBWatchPostgres
import DBWatchTestSupport
import Logging
import PostgresNIO

/// A logger that drops everything: tests read the replica's status instead.
let quietLogger = Logger(label: "dbwatch.tests.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

/// Runs `body` with a `PostgresClient` of `server` that runs meanwhile.
func withClient<T>(
    of server: PostgresServer, database: String? = nil, _ body: (PostgresClient) async throws -> T
) async throws -> T {
    var configuration = PostgresClient.Configuration(
        host: server.host, port: server.port, username: server.username, password: nil,
        database: database ?? server.database, tls: .disable)
    configuration.options.connectTimeout = .seconds(5)
    let client = PostgresClient(configuration: configuration, backgroundLogger: quietLogger)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        return try await body(client)
    }
}

/// A replica's `run()` in a task of its own, for the scope of a test.
final class RunningReplica: Sendable {
    let replica: PostgresReplica
    let task: Task<Void, any Error>

    init(_ replica: PostgresReplica) {
        self.replica = replica
        task = Task { try await replica.run() }
    }

    /// Stops it as a shutdown does, and waits until `run()` returned.
    func stop() async throws {
        task.cancel()
        try await withTimeout { [task] in try await task.value }
    }

    /// The error `run()` threw, waiting for it to end.
    func failure() async throws -> ReplicaError? {
        do {
            try await withTimeout { [task] in try await task.value }
            return nil
        } catch let error as ReplicaError {
            return error
        }
    }
}

/// Runs a replica while `body` runs, then stops it.
func withRunningReplica<T>(_ replica: PostgresReplica, _ body: (RunningReplica) async throws -> T) async throws -> T {
    let running = RunningReplica(replica)
    do {
        let value = try await body(running)
        running.task.cancel()
        _ = try? await running.task.value
        return value
    } catch {
        running.task.cancel()
        _ = try? await running.task.value
        throw error
    }
}

extension PostgresReplica {
    /// Waits until the replica applied everything committed in PostgreSQL
    /// so far.
    func catchUp(with client: PostgresClient, seconds: Double = defaultTestTimeout) async throws {
        let position = try await Self.currentPosition(of: client)
        try await waitUntilApplied(position, timeout: .seconds(seconds))
    }
}

extension PostgresServer {
    /// Runs SQL statements, each in its own transaction (psql's default).
    @discardableResult
    func run(_ statements: String...) async throws -> String {
        try await psql(statements.joined(separator: ";\n"))
    }
}

/// A table's rows as text, one line per row in key order, the same for
/// PostgreSQL and SQLite: `1|ada|10`, NULL as `∅`.
enum TableDump {
    static func postgres(_ server: PostgresServer, table: String, columns: [String], key: String = "id")
        async throws -> String
    {
        let cells = columns.map { "coalesce(\($0)::text, '∅')" }.joined(separator: ", ")
        return try await server.psql(
            "SELECT coalesce(string_agg(concat_ws('|', \(cells)), E'\\n' ORDER BY \(key)), '') FROM \(table)"
        ).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func sqlite(_ database: any DatabaseWriter, table: String, columns: [String], key: String = "id")
        async throws -> String
    {
        let cells = columns.map { "coalesce(CAST(\($0) AS TEXT), '∅')" }.joined(separator: " || '|' || ")
        return try await database.read { db in
            try db.fetchOne(
                String.self,
                sql:
                    "SELECT coalesce(group_concat(line, char(10)), '') FROM (SELECT \(cells) AS line FROM \(table) ORDER BY \(key))"
            ) ?? ""
        }
    }
}

/// A server with `schema` applied, a running client, and a replica file:
/// the usual start of a replica test.
struct ReplicaScene {
    let server: PostgresServer
    let client: PostgresClient
    let pool: DatabasePool
    let directory: TemporaryDirectory

    /// A replica of `tables` into this scene's file.
    func replica(
        tables: [String], configure: (inout PostgresReplica.Configuration) -> Void = { _ in }
    ) -> PostgresReplica {
        var configuration = PostgresReplica.Configuration(tables: tables)
        configuration.pollInterval = .milliseconds(2)
        configuration.initialRetryDelay = .milliseconds(20)
        configuration.maximumRetryDelay = .milliseconds(200)
        configure(&configuration)
        return PostgresReplica(client: client, database: pool, configuration: configuration, logger: quietLogger)
    }

    /// The replica file's rows of `table`, as ``TableDump`` writes them.
    func replicaRows(_ table: String, columns: [String], key: String = "id") async throws -> String {
        try await TableDump.sqlite(pool, table: table, columns: columns, key: key)
    }

    /// PostgreSQL's rows of `table`, as ``TableDump`` writes them.
    func sourceRows(_ table: String, columns: [String], key: String = "id") async throws -> String {
        try await TableDump.postgres(server, table: table, columns: columns, key: key)
    }

    /// The names of the replication slots in the server.
    func slotNames() async throws -> [String] {
        try await server.psql("SELECT slot_name FROM pg_replication_slots ORDER BY 1")
            .split(separator: "\n").map(String.init)
    }
}

/// Starts a server, applies `schema` (statements separated by `;`), and
/// runs `body` with a client and a fresh replica file.
func withReplicaScene<T>(schema: String, _ body: (ReplicaScene) async throws -> T) async throws -> T {
    try await withPostgresServer { server in
        if !schema.isEmpty { try await server.psql(schema) }
        return try await withClient(of: server) { client in
            try await withTemporaryDirectory { directory in
                let pool = try DatabasePool(path: directory.file("replica.sqlite"))
                return try await body(
                    ReplicaScene(server: server, client: client, pool: pool, directory: directory))
            }
        }
    }
}
