import BenchProcess
import DBWatch
import DBWatchPostgres
import Foundation
import PostgresNIO

/// Workloads 3 and 4: what an operator sees under pgbench. A replica of
/// pgbench's three tables with a primary key (`pgbench_history` has none).
extension Bench {
    static let pgbenchTables = ["pgbench_accounts", "pgbench_branches", "pgbench_tellers"]

    /// `pgbench` against the benchmark's server with `arguments`; its exit
    /// status and output (bounded by `seconds` plus a margin).
    func pgbench(_ arguments: [String], seconds: Int) async throws -> (status: Int32, output: String) {
        let command =
            [BenchPostgres.programs + "/pgbench", "-h", "127.0.0.1", "-p", "\(postgres.port)", "-U", "postgres"]
            + arguments + ["postgres"]
        return try await Task.detached { try BenchPostgres.run(command, timeout: Double(seconds) + 60) }.value
    }

    /// The lines of the server's log so far.
    func logLineCount() -> Int {
        guard let data = FileManager.default.contents(atPath: postgres.logFile) else { return 0 }
        return data.reduce(0) { $1 == 10 ? $0 + 1 : $0 }
    }

    /// `pgbench -i -s 1` and a replica of its tables, copied.
    func startPgbenchReplica(_ file: String) async throws -> (DatabasePool, RunningReplica) {
        let initialize = try await pgbench(["-i", "-s", "1", "-q"], seconds: 120)
        guard initialize.status == 0 else { throw BenchError("pgbench -i failed: \(initialize.output)") }
        let pool = try DatabasePool(path: file)
        var configuration = PostgresReplica.Configuration(tables: Self.pgbenchTables)
        configuration.maximumRetryDelay = .milliseconds(500)
        let running = RunningReplica(
            PostgresReplica(
                client: client, server: server, database: pool, configuration: configuration, logger: quietLogger))
        let position = try await PostgresReplica.currentPosition(of: client)
        try await running.replica.waitUntilApplied(position, timeout: .seconds(120))
        return (pool, running)
    }

    /// Workload 3: pgbench at `--tps` for `--log-seconds` with a replica
    /// following: the lines PostgreSQL logged meanwhile, and how much log
    /// the replica's slot retains, sampled every 500 ms.
    func logAndRetainedWAL() async throws {
        let (pool, running) = try await startPgbenchReplica(newFile("pgbench-log"))
        let linesBefore = logLineCount()
        let sampler = Task { [client] in
            var retained: [Double] = []
            while !Task.isCancelled {
                let rows = try? await client.query(
                    """
                    SELECT coalesce(max(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)), 0)::float8 \
                    FROM pg_replication_slots WHERE slot_name LIKE 'dbwatch%'
                    """)
                if let rows { for try await value in rows.decode(Double.self) { retained.append(value) } }
                try? await Task.sleep(for: .milliseconds(500))
            }
            return retained
        }
        let seconds = options.logSeconds
        let load = try await pgbench(
            ["-n", "-c", "4", "-j", "2", "-R", "\(options.tps)", "-T", "\(seconds)"], seconds: seconds)
        sampler.cancel()
        let retained = (try? await sampler.value) ?? []
        guard load.status == 0 else { throw BenchError("pgbench failed: \(load.output)") }
        let lines = logLineCount() - linesBefore
        let position = try await PostgresReplica.currentPosition(of: client)
        try await running.replica.waitUntilApplied(position, timeout: .seconds(120))
        let equal = try await pgbenchTablesEqual(pool)
        let transactions = load.output.split(separator: "\n").first {
            $0.contains("number of transactions actually processed")
        }
        try await running.stopAndRemove()
        await pool.close()
        results.add(
            "log.lines", "3. PostgreSQL log lines during \(seconds) s of pgbench -R \(options.tps)", Double(lines),
            "lines")
        results.add(
            "log.retained.max", "   WAL the replica's slot retains, largest", (retained.max() ?? 0) / 1_048_576, "MiB")
        results.add(
            "log.retained.last", "   WAL the replica's slot retains, at the end", (retained.last ?? 0) / 1_048_576,
            "MiB")
        results.add("log.equal", "   replica equal to PostgreSQL row for row (1 = yes)", equal ? 1 : 0, "")
        print("   pgbench: \(transactions.map(String.init) ?? "?")")
        _ = try await client.query("DROP TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history")
    }

    /// Whether the replica's pgbench tables equal PostgreSQL's, every
    /// column as text, `char(n)` padding included.
    func pgbenchTablesEqual(_ pool: DatabasePool) async throws -> Bool {
        let queries = [
            ("pgbench_accounts", "aid", ["aid", "bid", "abalance", "filler"]),
            ("pgbench_branches", "bid", ["bid", "bbalance", "filler"]),
            ("pgbench_tellers", "tid", ["tid", "bid", "tbalance", "filler"]),
        ]
        for (table, key, columns) in queries {
            // format('%s', …) writes NULL as an empty string.
            let postgresCells = columns.map { "CASE WHEN \($0) IS NULL THEN '∅' ELSE format('%s', \($0)) END" }
                .joined(separator: " || '|' || ")
            var source: [String] = []
            for try await line in try await client.query(
                PostgresQuery(unsafeSQL: "SELECT \(postgresCells) FROM \(table) ORDER BY \(key)")
            ).decode(String.self) {
                source.append(line)
            }
            let sqliteCells = columns.map { "coalesce(CAST(\($0) AS TEXT), '∅')" }.joined(separator: " || '|' || ")
            let replica = try await pool.read { db in
                try db.fetchAll(String.self, sql: "SELECT \(sqliteCells) FROM \(table) ORDER BY \(key)")
            }
            if source != replica {
                let first = zip(source, replica).first { $0 != $1 }
                print(
                    "   \(table) differs: \(source.count) rows vs \(replica.count); first: \(String(describing: first))"
                )
                return false
            }
        }
        return true
    }

    /// Workload 4: PostgreSQL restarted `--restarts` times of each kind
    /// under pgbench load: for each, the time from PostgreSQL accepting
    /// connections again to the replica having applied a commit made then.
    func restarts() async throws {
        let (pool, running) = try await startPgbenchReplica(newFile("pgbench-restarts"))
        let log = postgres.logFile
        let kinds: [(String, [[String]], Duration)] = [
            ("fast", [["restart", "-m", "fast", "-l", log]], .zero),
            ("immediate", [["restart", "-m", "immediate", "-l", log]], .zero),
            ("stop 20 s, start", [["stop", "-m", "fast"]], .seconds(20)),
        ]
        do {
            for (name, commands, pause) in kinds {
                var recoveries: [Double] = []
                for _ in 0..<options.restarts {
                    // A few seconds of load, restarted in its middle.
                    let load = Task {
                        try await self.pgbench(["-n", "-c", "4", "-j", "2", "-R", "300", "-T", "3"], seconds: 3)
                    }
                    try await Task.sleep(for: .seconds(1))
                    for command in commands {
                        try await Task.detached { [postgres] in try postgres.pgctl(command) }.value
                    }
                    if pause > .zero {
                        try await Task.sleep(for: pause)
                        try await Task.detached { [postgres] in try postgres.start() }.value
                    }
                    let back = nowNanoseconds()
                    // A commit made now, once PostgreSQL accepts it (the
                    // client's pool reconnects too).
                    var position: LogSequenceNumber?
                    while position == nil {
                        position = try? await markerCommit()
                        if position == nil { try await Task.sleep(for: .milliseconds(20)) }
                    }
                    try await running.replica.waitUntilApplied(position!, timeout: .seconds(60))
                    recoveries.append(Double(nowNanoseconds() - back) / 1e9)
                    _ = try? await load.value
                }
                recoveries.sort()
                let key = name.split(separator: " ").first!
                results.add(
                    "restart.\(key).max", "4. restart \(name) ×\(recoveries.count): back → applied, largest",
                    recoveries.last ?? 0, "s")
                results.add("restart.\(key).p50", "   … median", percentile(recoveries, 0.5), "s")
                results.add(
                    "restart.\(key).within3", "   … within 3 s", Double(recoveries.filter { $0 < 3 }.count),
                    "of \(recoveries.count)")
            }
            let position = try await PostgresReplica.currentPosition(of: client)
            try await running.replica.waitUntilApplied(position, timeout: .seconds(120))
            let equal = try await pgbenchTablesEqual(pool)
            results.add(
                "restart.equal", "   replica equal to PostgreSQL row for row after all (1 = yes)", equal ? 1 : 0, "")
        } catch {
            try? await running.stop()
            await pool.close()
            throw error
        }
        try await running.stopAndRemove()
        await pool.close()
        _ = try await client.query("DROP TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history")
    }

    /// Commits an update of a replicated row on a new connection (the
    /// client's pool backs off after refused connections); returns the log
    /// position after it.
    private func markerCommit() async throws -> LogSequenceNumber {
        let configuration = PostgresConnection.Configuration(
            host: "127.0.0.1", port: postgres.port, username: "postgres", password: nil, database: "postgres",
            tls: .disable)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: quietLogger)
        defer { Task { try? await connection.close() } }
        _ = try await connection.query(
            "UPDATE pgbench_branches SET bbalance = bbalance WHERE bid = 1", logger: quietLogger)
        for try await text in try await connection.query(
            "SELECT pg_current_wal_insert_lsn()::text", logger: quietLogger
        ).decode(String.self) {
            if let position = LogSequenceNumber(text) { return position }
        }
        throw BenchError("no log position")
    }
}
