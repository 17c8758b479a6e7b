import ArgumentParser
import DBWatch
import DBWatchPostgres
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

/// `dbwatch replicate POSTGRES-URL REPLICA.sqlite --table NAME…`: a live
/// SQLite replica of PostgreSQL tables, kept current until a signal; with
/// `dbwatch serve` on the same file, live queries of PostgreSQL's data.
///
/// ```sh
/// dbwatch replicate postgres://app@db.example.com/shop replica.sqlite --table player --table team
/// ```
struct ReplicateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replicate",
        abstract: "Keep a SQLite file a live replica of PostgreSQL tables, until Ctrl-C or SIGTERM.",
        discussion: """
            Copies the tables into the SQLite file (created if missing) the first time, then applies \
            each PostgreSQL transaction that changes them as one SQLite transaction, read from \
            PostgreSQL's log through a replication slot (dbwatch_<id>) and a publication of the \
            tables; the server needs wal_level = logical. Run `dbwatch serve` on the same file for \
            live queries of the replica. Restarted on the same file, it continues where it stopped: \
            no change lost, none applied twice.

            PostgreSQL unreachable or restarted: the replica retries with backoff and says so on \
            standard error; the file keeps serving the last state applied. A change it cannot apply \
            faithfully (ALTER TABLE, DROP, a type it cannot map, the slot gone) stops it with exit 76 \
            and the error; the file keeps the last state applied. Ctrl-C or SIGTERM stops it (exit \
            0); the slot is kept for the next run (drop it with `dbwatch slots drop` when the replica \
            is gone for good). Status lines (phases, retried errors) go to standard error, unless \
            --quiet.

            With --metrics [host:]port, a small HTTP server on that address answers GET /metrics \
            (dbwatch_replica_lag_seconds, dbwatch_replica_transactions_applied_total, ... in \
            Prometheus' text format), GET /healthz (200 while the process answers) and GET /readyz \
            (200 while the replica streams, caught up since it connected and at most --ready-max-lag \
            seconds behind PostgreSQL, else 503 with a JSON {"message"}); its address is printed on \
            standard output once it listens.

            The URL: postgres://user:password@host:port/database (or postgresql://), port 5432 and \
            database the user's name unless given; ?sslmode=disable, prefer (the default: TLS if the \
            server offers it) or require (TLS with the server's certificate verified; verify-full \
            is the same).

            \(ExitStatus.helpText)
            """
    )

    @Argument(
        help: ArgumentHelp(
            "The PostgreSQL source: postgres://user:password@host:port/database[?sslmode=…].",
            valueName: "postgres-url"))
    var url: String

    @Argument(help: ArgumentHelp("The SQLite file of the replica (created if missing).", valueName: "replica.sqlite"))
    var database: String

    @Option(
        name: .customLong("table"),
        help: ArgumentHelp("A table to replicate, name or schema.name (repeat for each).", valueName: "name"))
    var tables: [String] = []

    @Option(
        help: ArgumentHelp(
            "Replicate every table of this existing publication instead of --table.", valueName: "name"))
    var publication: String?

    @Flag(help: "Print no status lines, only a fatal error.")
    var quiet = false

    @Option(
        help: ArgumentHelp(
            "Serve GET /metrics (Prometheus' text format), /healthz and /readyz on this address, "
                + "[host:]port (host 127.0.0.1 unless given; port 0: any free port).",
            valueName: "address"))
    var metrics: String?

    @Option(
        help: ArgumentHelp(
            "/readyz answers 503 while the replica is more than this many seconds behind PostgreSQL.",
            valueName: "seconds"))
    var readyMaxLag: Double = 10

    func validate() throws {
        _ = try PostgresURL.parse(url)
        switch (tables.isEmpty, publication) {
        case (true, nil): throw ValidationError("Give the tables to replicate (--table name), or --publication.")
        case (false, .some): throw ValidationError("Give --table or --publication, not both.")
        case (_, .some(let name)) where name.isEmpty: throw ValidationError("--publication is empty.")
        default: break
        }
        if tables.contains(where: \.isEmpty) { throw ValidationError("--table is empty.") }
        if let metrics { _ = try OperationsAddress.parse(metrics) }
        if !(readyMaxLag >= 0 && readyMaxLag <= 86_400) {
            throw ValidationError("--ready-max-lag must be between 0 and 86400 seconds.")
        }
        var seen = Set<String>()
        for table in tables where !seen.insert(table).inserted {
            throw ValidationError("--table \(CellText.sanitized(table)) is given twice.")
        }
    }

    /// The replica's configuration from the options.
    var replicaConfiguration: PostgresReplica.Configuration {
        publication.map { PostgresReplica.Configuration(publication: $0) }
            ?? PostgresReplica.Configuration(tables: tables)
    }

    func run() async throws {
        let url = try PostgresURL.parse(url)
        let interrupt = InterruptSignal(exitStatus: .success, stalled: "the replica")
        let path = database
        let pool = try await interrupt.opening(path) {
            try DatabaseFile.checkNotDirectory(path)
            var configuration = Configuration.commandLine()
            configuration.allowsURIFilenames = false
            return try DatabasePool(path: path, configuration: configuration)
        }
        let quiet = quiet
        let silent = Logger(label: "dbwatch", factory: { _ in SwiftLogNoOpLogHandler() })
        let client = PostgresClient(configuration: url.clientConfiguration, backgroundLogger: silent)
        let replica = PostgresReplica(
            client: client, server: url.replicaServer, database: pool, configuration: replicaConfiguration,
            // Its warnings (a retry) and errors (its end) are the status lines and the exit's message.
            logger: silent)
        var services: [any Service] = [client, replica]
        if let metrics {
            let operations = ReplicaOperationsServer(
                replica: replica, database: pool, maxLag: readyMaxLag, endpoint: PrometheusEndpoint.bootstrap())
            services.append(
                operations.application(at: try OperationsAddress.parse(metrics), logger: silent) { url in
                    Output.standardOutput("Metrics, /healthz and /readyz at \(CellText.sanitized(url))\n")
                })
        }
        let group = ServiceGroup(configuration: .init(services: services, logger: silent))
        if !quiet {
            let what = publication.map { "the publication \($0)" } ?? tables.joined(separator: ", ")
            Output.standardError(
                CellText.sanitized("dbwatch: replicating \(what) from \(url.redacted) into \(path)") + "\n")
        }
        do {
            // Each task says whether it was the group's; only the group's end ends the wait.
            try await withThrowingTaskGroup(of: Bool.self) { tasks in
                tasks.addTask {
                    try await group.run()
                    return true
                }
                tasks.addTask {
                    if await interrupt.wait() != nil { await group.triggerGracefulShutdown() }
                    return false
                }
                if !quiet {
                    tasks.addTask {
                        await Self.printStatus(of: replica)
                        return false
                    }
                }
                while let groupEnded = try await tasks.next() {
                    if groupEnded { tasks.cancelAll() }
                }
            }
        } catch {
            await pool.close()
            throw ErrorReport.exit(for: error)
        }
        await pool.close()
        if !quiet { Output.standardError(ReplicaStatusLines.stopped(.init(replica.status)) + "\n") }
    }

    /// Prints ``ReplicaStatusLines`` as the replica's status changes, until
    /// cancelled.
    static func printStatus(of replica: PostgresReplica) async {
        var old = ReplicaStatusLines.Snapshot()
        while !Task.isCancelled {
            let new = ReplicaStatusLines.Snapshot(replica.status)
            for line in ReplicaStatusLines.lines(from: old, to: new) { Output.standardError(line + "\n") }
            old = new
            try? await Task.sleep(for: .milliseconds(100))
        }
    }
}
