import BenchProcess
import DBWatch
import DBWatchPostgres
import Foundation
import Logging
import PostgresNIO
import Synchronization

// The PostgreSQL replica of issue 19, measured against a PostgreSQL 15 this
// program starts (and stops) itself:
//
//   1. latency: PostgreSQL COMMIT → the new value in a DBWatch observation
//      of the replica (poll 5 ms and 1 ms), beside the same UPDATE written
//      straight into a DBWatch pool;
//   2. apply rate: row changes per second, replica running under the load
//      and as a backlog, beside the same transactions written straight into
//      a DBWatch pool.
//
//   3. PostgreSQL's log and the slot's retained WAL under pgbench at a
//      fixed rate, with a replica following (`--only log`);
//   4. restarts of PostgreSQL under pgbench load, each kind
//      `--restarts` times: how long until the replica streams again, and
//      whether it ends equal to PostgreSQL (`--only restarts`).
//
//   dbwatch-bench-replica [--runs 3] [--commits 500] [--changes 100000]
//                         [--writers 4] [--only latency,apply,backlog,log,restarts]
//                         [--log-seconds 60] [--tps 500] [--restarts 20]
//
// DBWATCH_BENCH_MARK=1 prints `MARK apply …` (with the pid) to
// stderr 2 s before each backlog's apply starts, for `perf record -p`.

struct Options {
    var runs = 3
    var commits = 500
    var warmup = 20
    var changes = 100_000
    var writers = 4
    var only: Set<String> = ["latency", "apply"]
    var logSeconds = 60
    var tps = 500
    var restarts = 20

    init(_ arguments: [String]) throws {
        var iterator = arguments.makeIterator()
        func number(_ name: String) throws -> Int {
            guard let text = iterator.next(), let value = Int(text), value > 0 else {
                throw BenchError("\(name) needs a positive number")
            }
            return value
        }
        while let argument = iterator.next() {
            switch argument {
            case "--runs": runs = try number(argument)
            case "--commits": commits = try number(argument)
            case "--changes": changes = try number(argument)
            case "--writers": writers = try number(argument)
            case "--log-seconds": logSeconds = try number(argument)
            case "--tps": tps = try number(argument)
            case "--restarts": restarts = try number(argument)
            case "--only": only = Set((iterator.next() ?? "").split(separator: ",").map(String.init))
            default: throw BenchError("unknown option \(argument)")
            }
        }
    }
}

/// A replica's `run()` in a task of its own.
final class RunningReplica: Sendable {
    let replica: PostgresReplica
    let task: Task<Void, any Error>

    init(_ replica: PostgresReplica) {
        self.replica = replica
        task = Task { try await replica.run() }
    }

    /// Stops it as a shutdown does; the slot stays.
    func stop() async throws {
        task.cancel()
        try await task.value
    }

    /// Stops it and drops its slot and publication.
    func stopAndRemove() async throws {
        try await stop()
        try await replica.remove()
    }
}

/// What every workload shares: the PostgreSQL client, the scratch folder,
/// the results.
final class Bench: Sendable {
    let client: PostgresClient
    /// The replication connection's server.
    let server: PostgresReplica.Server
    /// The PostgreSQL the benchmark started.
    let postgres: BenchPostgres
    let options: Options
    let results: Results
    let scratch: String
    private let counter = Counter()

    init(
        client: PostgresClient, postgres: BenchPostgres, options: Options, results: Results, scratch: String
    ) {
        self.client = client
        self.postgres = postgres
        self.server = PostgresReplica.Server(
            host: "127.0.0.1", port: postgres.port, username: "postgres", database: "postgres", tls: .disable)
        self.options = options
        self.results = results
        self.scratch = scratch
    }

    func newTable(_ prefix: String) -> String { "\(prefix)_\(counter.next())" }

    func newFile(_ prefix: String) -> String { "\(scratch)/\(prefix)-\(counter.next()).sqlite" }

    func configuration(table: String, _ configure: (inout PostgresReplica.Configuration) -> Void)
        -> PostgresReplica.Configuration
    {
        var configuration = PostgresReplica.Configuration(tables: [table])
        configure(&configuration)
        return configuration
    }

    /// A replica of `table` into `pool`, running, with its copy done.
    func startReplica(
        table: String, pool: DatabasePool, configure: (inout PostgresReplica.Configuration) -> Void
    ) async throws -> RunningReplica {
        let running = RunningReplica(
            PostgresReplica(
                client: client, server: server, database: pool, configuration: configuration(table: table, configure),
                logger: quietLogger))
        do {
            let position = try await PostgresReplica.currentPosition(of: client)
            try await running.replica.waitUntilApplied(position, timeout: .seconds(60))
        } catch {
            try? await running.stop()
            throw error
        }
        return running
    }
}

/// The postmaster's pid, set once before any workload runs.
nonisolated(unsafe) var serverPID: Int32 = 0  // written once at start, before any task reads it

final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }
}

@main
enum ReplicaBenchmark {
    static func main() async {
        do {
            try await run()
        } catch {
            FileHandle.standardError.write(Data("dbwatch-bench-replica: \(error)\n".utf8))
            exit(1)
        }
    }
}

func run() async throws {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    var template = Array("/tmp/dbwatch-bench-replica-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw BenchError("mkdtemp failed") }
    let scratch = String(cString: made)
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let server = try BenchPostgres.start()
    defer { server.stop() }
    // Interrupted: stop the server and remove the files before exiting.
    var signalSources: [any DispatchSourceSignal] = []
    for number in [SIGINT, SIGTERM] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            server.stop()
            try? FileManager.default.removeItem(atPath: scratch)
            exit(130)
        }
        source.resume()
        signalSources.append(source)
    }
    defer { signalSources.forEach { $0.cancel() } }
    serverPID = server.pid
    print("PostgreSQL 15 on 127.0.0.1:\(server.port) (pid \(server.pid)), \(BenchPostgres.settings)")
    print("SQLite: DatabasePool (WAL), files in \(scratch)")
    var configuration = PostgresClient.Configuration(
        host: "127.0.0.1", port: server.port, username: "postgres", password: nil, database: "postgres",
        tls: .disable)
    configuration.options.connectTimeout = .seconds(5)
    let client = PostgresClient(configuration: configuration, backgroundLogger: quietLogger)
    let results = Results()
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        let bench = Bench(client: client, postgres: server, options: options, results: results, scratch: scratch)
        for run in 1...options.runs {
            print("\nRun \(run) of \(options.runs) (\(machineLoad()))")
            // Alternate which side goes first.
            let baselineFirst = run % 2 == 1
            if options.only.contains("latency") {
                if baselineFirst { try await bench.latencyDirect() }
                try await bench.latencyReplica(key: "replica")
                if !baselineFirst { try await bench.latencyDirect() }
            }
            if options.only.contains("log") { try await bench.logAndRetainedWAL() }
            if options.only.contains("restarts") { try await bench.restarts() }
            if options.only.contains("backlog") {
                for k in [1, 10] {
                    try await bench.applyBacklog(rowsPerTransaction: k)
                }
            }
            if options.only.contains("apply") {
                for k in [1, 10] {
                    if baselineFirst { try await bench.applyDirect(rowsPerTransaction: k) }
                    try await bench.applySustained(rowsPerTransaction: k)
                    try await bench.applyBacklog(rowsPerTransaction: k)
                    if !baselineFirst { try await bench.applyDirect(rowsPerTransaction: k) }
                    try await bench.applyDirect(rowsPerTransaction: k, storingPosition: true)
                    if let applied = results.value("apply.k\(k).sustained"),
                        let written = results.value("apply.k\(k).sustained.pg")
                    {
                        results.add(
                            "apply.k\(k).sustained.keptUp", "   \(k)-row tx, sustained / PostgreSQL commits alone",
                            100 * applied / written, "%")
                    }
                    if let direct = results.value("apply.k\(k).direct") {
                        for side in ["sustained", "backlog"] {
                            if let rate = results.value("apply.k\(k).\(side)") {
                                results.add(
                                    "apply.k\(k).\(side).ratio", "   \(k)-row tx, \(side) / DBWatch pool",
                                    100 * rate / direct, "%")
                            }
                        }
                    }
                }
            }
        }
        print("\n(\(machineLoad()))")
        results.printSummary(runs: options.runs)
    }
}
