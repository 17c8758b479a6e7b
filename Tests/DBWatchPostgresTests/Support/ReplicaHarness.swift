import DBWatch
import Glibc
import DBWatchPostgres
import DBWatchTestSupport
import Foundation
import Logging
import PostgresNIO

/// Waits until `condition` holds (it may query a server), checking every
/// 10 ms; fails with ``TimeoutError`` after `seconds`.
func waitUntilAsync(seconds: Double = defaultTestTimeout, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TimeoutError(seconds: seconds) }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// A logger that drops everything: tests read the replica's status
/// instead. With `DBWATCH_TEST_LOG=1` in the environment, it writes every
/// message to standard error, for a failing test's story.
let quietLogger: Logger = {
    guard ProcessInfo.processInfo.environment["DBWATCH_TEST_LOG"] != nil else {
        return Logger(label: "dbwatch.tests.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
    }
    var logger = Logger(label: "dbwatch.tests.postgres", factory: { StreamLogHandler.standardError(label: $0) })
    logger.logLevel = .debug
    return logger
}()

/// Runs `body` with a `PostgresClient` of `server` that runs meanwhile.
func withClient<T>(
    of server: PostgresServer, database: String? = nil, _ body: (PostgresClient) async throws -> T
) async throws -> T {
    var configuration = PostgresClient.Configuration(
        host: server.host, port: server.port, username: server.username, password: nil,
        database: database ?? server.database, tls: .disable)
    configuration.options.connectTimeout = .seconds(5)
    let client = PostgresClient(configuration: configuration, backgroundLogger: quietLogger)
    let running = Task { await client.run() }
    do {
        let value = try await body(client)
        running.cancel()
        try await withTimeout { await running.value }
        return value
    } catch {
        running.cancel()
        try await withTimeout { await running.value }
        throw error
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

    /// Cancels it and waits until `run()` returned, whatever it threw.
    func stopIgnoringItsError() async throws {
        task.cancel()
        try await withTimeout { [task] in _ = try? await task.value }
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
        try await running.stopIgnoringItsError()
        return value
    } catch {
        try await running.stopIgnoringItsError()
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
    /// The replication connection's server: this one, as `postgres`,
    /// without TLS.
    func replicaServer(database: String? = nil) -> PostgresReplica.Server {
        PostgresReplica.Server(
            host: host, port: port, username: username, database: database ?? self.database, tls: .disable)
    }

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
        configuration.initialRetryDelay = .milliseconds(20)
        configuration.maximumRetryDelay = .milliseconds(200)
        configuration.queryTimeout = .seconds(5)
        configure(&configuration)
        return PostgresReplica(
            client: client, server: server.replicaServer(), database: pool, configuration: configuration,
            logger: quietLogger)
    }

    /// The replica file's rows of `table`, as ``TableDump`` writes them.
    func replicaRows(_ table: String, columns: [String], key: String = "id") async throws -> String {
        try await TableDump.sqlite(pool, table: table, columns: columns, key: key)
    }

    /// PostgreSQL's rows of `table`, as ``TableDump`` writes them.
    func sourceRows(_ table: String, columns: [String], key: String = "id") async throws -> String {
        try await TableDump.postgres(server, table: table, columns: columns, key: key)
    }

    /// The pid of the process streaming to a replica: the one that holds
    /// its slot, waiting until one does. (`pg_stat_activity` may still
    /// list a walsender that is exiting, after a reconnection or the
    /// slot's creation.)
    func walSenderPID() async throws -> pid_t? {
        var found: pid_t?
        try await waitUntilAsync {
            found = try await slotHolder()
            return found != nil
        }
        return found
    }

    /// The pid of the process that holds a replica's slot now, if any.
    func slotHolder() async throws -> pid_t? {
        let pids = try await server.psql(
            "SELECT active_pid FROM pg_replication_slots WHERE active_pid IS NOT NULL AND slot_name LIKE 'dbwatch%'")
        return pids.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    /// Stops (`SIGSTOP`) the process that holds a replica's slot, as a
    /// machine that vanished would stop: no answer, no close. Returns its
    /// pid, for `SIGCONT`. If the slot changed hands meanwhile (a
    /// reconnection of a slow run), the stopped process is resumed and the
    /// new holder stopped instead.
    func stopSlotHolder() async throws -> pid_t {
        let deadline = ContinuousClock.now + .seconds(defaultTestTimeout)
        while ContinuousClock.now < deadline {
            guard let pid = try await walSenderPID() else { continue }
            kill(pid, SIGSTOP)
            if try await slotHolder() == pid { return pid }
            kill(pid, SIGCONT)
        }
        throw TimeoutError(seconds: defaultTestTimeout)
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
                // Closed here rather than on release: once in five runs of
                // the suite, a pool stayed referenced after its test (the
                // PostgreSQL restart test's, it seems; the holder was not
                // found), and its threads kept the test process from
                // exiting.
                do {
                    let value = try await body(
                        ReplicaScene(server: server, client: client, pool: pool, directory: directory))
                    await pool.close()
                    return value
                } catch {
                    await pool.close()
                    throw error
                }
            }
        }
    }
}
