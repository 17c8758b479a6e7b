import BenchProcess
import DBWatch
import DBWatchPostgres
import Foundation
import PostgresNIO

/// One row change of the apply workload: an insert of a new key, or an
/// update of a key an earlier transaction inserted.
struct RowChange: Sendable {
    var id: Int64
    var v: Int64
    var isInsert: Bool
    var note: String { "row \(id) value \(v)" }
}

/// The transactions of one writer: half inserts, half updates of rows its
/// earlier transactions inserted (distinct keys in one transaction, so
/// PostgreSQL's multi-row upsert accepts them), from a fixed seed.
func makeTransactions(writer: Int, changes: Int, rowsPerTransaction: Int) -> [[RowChange]] {
    var generator = SeededGenerator(seed: UInt64(19 + writer))
    let base = Int64(writer) * 100_000_000
    var inserted: Int64 = 0
    var transactions: [[RowChange]] = []
    var made = 0
    while made < changes {
        let count = min(rowsPerTransaction, changes - made)
        var transaction: [RowChange] = []
        var updated = Set<Int64>()
        let before = inserted
        for index in 0..<count {
            let number = Int64(made + index)
            if before < Int64(rowsPerTransaction) || number % 2 == 0 || updated.count == Int(before) {
                inserted += 1
                transaction.append(RowChange(id: base + inserted, v: number, isInsert: true))
            } else {
                var id: Int64
                repeat { id = Int64.random(in: 1...before, using: &generator) } while updated.contains(id)
                updated.insert(id)
                transaction.append(RowChange(id: base + id, v: number, isInsert: false))
            }
        }
        transactions.append(transaction)
        made += count
    }
    return transactions
}

extension Bench {
    /// Every writer's transactions, interleaved as the direct baseline
    /// writes them.
    func workload(rowsPerTransaction: Int) -> [[[RowChange]]] {
        (0..<options.writers).map {
            makeTransactions(
                writer: $0, changes: options.changes / options.writers, rowsPerTransaction: rowsPerTransaction)
        }
    }

    /// The baseline: the same transactions written straight into a DBWatch
    /// pool, one `pool.write` each (`INSERT` or `UPDATE` per row).
    func applyDirect(rowsPerTransaction k: Int, storingPosition: Bool = false) async throws {
        let writers = workload(rowsPerTransaction: k)
        let pool = try DatabasePool(path: newFile("apply-direct"))
        try await pool.write { db in
            try db.execute(
                sql: "CREATE TABLE load (id INTEGER, v INTEGER NOT NULL, note TEXT, PRIMARY KEY (id))")
            try db.execute(sql: "CREATE TABLE position (id INTEGER PRIMARY KEY, position INTEGER NOT NULL)")
            try db.execute(sql: "INSERT INTO position VALUES (1, 0)")
        }
        let total = writers.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } }
        let longest = writers.map(\.count).max() ?? 0
        let start = nowNanoseconds()
        for index in 0..<longest {
            for writer in writers where index < writer.count {
                let transaction = writer[index]
                try await pool.write { db in
                    for change in transaction {
                        if change.isInsert {
                            try db.cachedStatement(sql: "INSERT INTO load (id, v, note) VALUES (?, ?, ?)")
                                .execute(arguments: [change.id, change.v, change.note])
                        } else {
                            try db.cachedStatement(sql: "UPDATE load SET v = ?, note = ? WHERE id = ?")
                                .execute(arguments: [change.v, change.note, change.id])
                        }
                    }
                    if storingPosition {
                        try db.cachedStatement(sql: "UPDATE position SET position = position + 1").execute()
                    }
                }
            }
        }
        let seconds = Double(nowNanoseconds() - start) / 1e9
        await pool.close()
        if storingPosition {
            results.add(
                "apply.k\(k).direct.position", "   … each also updating a one-row position table",
                Double(total) / seconds, "rows/s")
        } else {
            results.add(
                "apply.k\(k).direct", "2. \(k)-row tx straight into a DBWatch pool", Double(total) / seconds,
                "rows/s")
        }
    }

    /// Writes the transactions to PostgreSQL from `options.writers`
    /// connections at once, one multi-row upsert per transaction; returns
    /// the seconds taken.
    func writePostgres(_ writers: [[[RowChange]]], table: String) async throws -> Double {
        let start = nowNanoseconds()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for transactions in writers {
                group.addTask {
                    try await self.client.withConnection { connection in
                        for transaction in transactions {
                            var binds = PostgresBindings(capacity: transaction.count * 3)
                            var values: [String] = []
                            for (index, change) in transaction.enumerated() {
                                values.append("($\(index * 3 + 1), $\(index * 3 + 2), $\(index * 3 + 3))")
                                binds.append(change.id)
                                binds.append(change.v)
                                binds.append(change.note)
                            }
                            let sql =
                                "INSERT INTO \(table) (id, v, note) VALUES \(values.joined(separator: ", ")) "
                                + "ON CONFLICT (id) DO UPDATE SET v = excluded.v, note = excluded.note"
                            try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: quietLogger)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        return Double(nowNanoseconds() - start) / 1e9
    }

    func createLoadTable() async throws -> String {
        let table = newTable("load")
        _ = try await client.query(
            PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (id bigint PRIMARY KEY, v bigint NOT NULL, note text)"))
        return table
    }

    /// The replica runs while the writers commit; from the first commit to
    /// the replica having applied the last.
    func applySustained(rowsPerTransaction k: Int) async throws {
        let writers = workload(rowsPerTransaction: k)
        let total = writers.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } }
        let table = try await createLoadTable()
        let pool = try DatabasePool(path: newFile("apply-sustained"))
        let replica = try await startReplica(table: table, pool: pool) { _ in }
        do {
            let start = nowNanoseconds()
            let serverCPUStart = serverCPUNanoseconds()
            // How far the slot's restart_lsn trails its confirmed position
            // (what each read decodes again), sampled every 200 ms.
            let sampler = Task { [client] in
                var largest = 0.0
                while !Task.isCancelled {
                    do {
                        let rows = try await client.query(
                            """
                            SELECT coalesce(max(pg_wal_lsn_diff(confirmed_flush_lsn, restart_lsn)), 0)::float8 \
                            FROM pg_replication_slots WHERE slot_name LIKE 'dbwatch%'
                            """)
                        for try await value in rows.decode(Double.self) { largest = max(largest, value) }
                    } catch {
                        break
                    }
                    try? await Task.sleep(for: .milliseconds(200))
                }
                return largest
            }
            let writeSeconds = try await writePostgres(writers, table: table)
            let written = nowNanoseconds()
            let position = try await PostgresReplica.currentPosition(of: client)
            try await replica.replica.waitUntilApplied(position, timeout: .seconds(600))
            let applied = nowNanoseconds()
            let serverCPU = Double(serverCPUNanoseconds() - serverCPUStart) / 1e9
            sampler.cancel()
            let restartLag = await sampler.value
            let seconds = Double(applied - start) / 1e9
            try await replica.stopAndRemove()
            let count = try await pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM \(table)") }
            let inserts = writers.joined().joined().filter(\.isInsert).count
            guard count == inserts else { throw BenchError("replica has \(count ?? -1) rows, expected \(inserts)") }
            results.add(
                "apply.k\(k).sustained", "2. \(k)-row tx, replica running: applied", Double(total) / seconds,
                "rows/s")
            results.add(
                "apply.k\(k).sustained.pg", "   PostgreSQL commits alone (\(options.writers) connections)",
                Double(total) / writeSeconds, "rows/s")
            results.add("apply.k\(k).sustained.lag", "   last commit → applied", milliseconds(applied - written), "ms")
            results.add(
                "apply.k\(k).sustained.pgcpu", "   CPU of PostgreSQL, commits and replica's reads", serverCPU, "s")
            results.add(
                "apply.k\(k).sustained.restartlag", "   slot's restart_lsn behind its confirmed position, largest",
                restartLag / 1_048_576, "MiB")
        } catch {
            try? await replica.stop()
            await pool.close()
            throw error
        }
        await pool.close()
        _ = try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
    }

    /// The writers commit while the replica is stopped; then a replica
    /// starts on the same file and applies the backlog as PostgreSQL
    /// streams it. Also times PostgreSQL decoding the same backlog from a
    /// slot of its own (`count(*)`: decoding alone; rows fetched: decoding
    /// and transfer).
    func applyBacklog(rowsPerTransaction k: Int) async throws {
        let writers = workload(rowsPerTransaction: k)
        let total = writers.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } }
        let table = try await createLoadTable()
        let pool = try DatabasePool(path: newFile("apply-backlog"))
        let first = try await startReplica(table: table, pool: pool) { _ in }
        try await first.stop()
        let probeSlot = "bench_probe_\(table)"
        let publication = "bench_pub_\(table)"
        _ = try await client.query(PostgresQuery(unsafeSQL: "CREATE PUBLICATION \(publication) FOR TABLE \(table)"))
        _ = try await client.query(
            PostgresQuery(unsafeSQL: "SELECT pg_create_logical_replication_slot('\(probeSlot)', 'pgoutput')"))
        let writeCPUStart = serverCPUNanoseconds()
        let writeSeconds = try await writePostgres(writers, table: table)
        let writeCPU = Double(serverCPUNanoseconds() - writeCPUStart) / 1e9
        let position = try await PostgresReplica.currentPosition(of: client)
        // For a profiler attached to this process during the apply alone:
        // DBWATCH_BENCH_MARK=1 says when it starts, and waits 2 s first.
        if ProcessInfo.processInfo.environment["DBWATCH_BENCH_MARK"] != nil {
            FileHandle.standardError.write(Data("MARK apply \(k) \(getpid())\n".utf8))
            try await Task.sleep(for: .seconds(2))
        }
        let start = nowNanoseconds()
        let processCPUStart = cpuNanoseconds()
        let serverCPUStart = serverCPUNanoseconds()
        let second = RunningReplica(
            PostgresReplica(
                client: client, server: server, database: pool, configuration: configuration(table: table) { _ in },
                logger: quietLogger))
        do {
            try await second.replica.waitUntilApplied(position, timeout: .seconds(900))
        } catch {
            try? await second.stop()
            await pool.close()
            throw error
        }
        let seconds = Double(nowNanoseconds() - start) / 1e9
        let processCPU = Double(cpuNanoseconds() - processCPUStart) / 1e9
        let serverCPU = Double(serverCPUNanoseconds() - serverCPUStart) / 1e9
        try await second.stopAndRemove()
        let count = try await pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM \(table)") }
        await pool.close()
        let inserts = writers.joined().joined().filter(\.isInsert).count
        guard count == inserts else { throw BenchError("replica has \(count ?? -1) rows, expected \(inserts)") }

        let peek =
            "pg_logical_slot_peek_binary_changes('\(probeSlot)', NULL, NULL, 'proto_version', '1', 'publication_names', '\(publication)')"
        var decodeStart = nowNanoseconds()
        var messages = 0
        for try await n in try await client.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(peek)")).decode(
            Int.self)
        {
            messages = n
        }
        let decodeSeconds = Double(nowNanoseconds() - decodeStart) / 1e9
        decodeStart = nowNanoseconds()
        var bytes = 0
        try await client.withConnection { connection in
            for try await row in try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT data FROM \(peek)"), logger: quietLogger)
            {
                bytes += row.makeRandomAccess()[0].bytes?.readableBytes ?? 0
            }
        }
        let fetchSeconds = Double(nowNanoseconds() - decodeStart) / 1e9
        _ = try await client.query(PostgresQuery(unsafeSQL: "SELECT pg_drop_replication_slot('\(probeSlot)')"))
        _ = try await client.query(PostgresQuery(unsafeSQL: "DROP PUBLICATION \(publication)"))
        _ = try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))

        results.add("apply.k\(k).backlog", "2. \(k)-row tx, backlog: applied", Double(total) / seconds, "rows/s")
        results.add("apply.k\(k).backlog.seconds", "   replica: whole backlog", seconds, "s")
        results.add("apply.k\(k).backlog.cpu", "   CPU of this process meanwhile (parse, SQLite)", processCPU, "s")
        results.add("apply.k\(k).backlog.pgcpu", "   CPU of PostgreSQL meanwhile (decoding)", serverCPU, "s")
        results.add(
            "apply.k\(k).backlog.pg", "   PostgreSQL commits alone (\(options.writers) connections)",
            Double(total) / writeSeconds, "rows/s")
        results.add("apply.k\(k).backlog.pgwritecpu", "   CPU of PostgreSQL for the commits alone", writeCPU, "s")
        results.add("apply.k\(k).backlog.decode", "   PostgreSQL decoding it alone (count(*))", decodeSeconds, "s")
        results.add(
            "apply.k\(k).backlog.fetch", "   decoding + fetching it (\(messages) messages, \(bytes / 1024) KiB)",
            fetchSeconds, "s")
    }
}

/// User + system CPU time of every PostgreSQL process (the postmaster and
/// its children), from /proc, in nanoseconds (10 ms ticks).
func serverCPUNanoseconds() -> UInt64 {
    let tick = UInt64(sysconf(Int32(_SC_CLK_TCK)))
    var total: UInt64 = 0
    for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = Int32(name), pid == serverPID || parentPID(of: pid) == serverPID,
            let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { continue }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        // Fields after the name: state(0) ppid(1) … utime(11) stime(12).
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { continue }
        total += (user + system) * 1_000_000_000 / tick
    }
    return total
}

private func parentPID(of pid: Int32) -> Int32? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
    else { return nil }
    return stat[stat.index(after: end)...].split(separator: " ").dropFirst().first.flatMap { Int32($0) }
}
