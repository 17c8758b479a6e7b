import BenchProcess
import DBWatch
import DBWatchPostgres
import Foundation
import PostgresNIO

/// Workload 1: from just before a commit to the new value in a DBWatch
/// observation, for commits paced by a random 5–15 ms pause after each
/// value arrived.
extension Bench {
    /// The same single-row `UPDATE` written straight into a DBWatch pool:
    /// from just before `pool.write` to the value.
    func latencyDirect() async throws {
        let pool = try DatabasePool(path: newFile("latency-direct"))
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER, v INTEGER NOT NULL, note TEXT, PRIMARY KEY (id))")
            try db.execute(sql: "INSERT INTO item VALUES (1, 0, 'latency')")
        }
        let probe = LatencyProbe()
        let consumer = Task {
            for try await value in pool.observe(RowValue(table: "item", id: 1)) { probe.deliver(value) }
        }
        _ = try await probe.stamp(of: 0)
        var generator = SeededGenerator(seed: 19)
        var latencies: [Double] = []
        for value in 1...(options.commits + options.warmup) {
            let start = nowNanoseconds()
            try await pool.write { db in
                try db.cachedStatement(sql: "UPDATE item SET v = ? WHERE id = 1").execute(arguments: [value])
            }
            let received = try await probe.stamp(of: value)
            if value > options.warmup { latencies.append(milliseconds(received - start)) }
            try await Task.sleep(for: .microseconds(Int.random(in: 5_000...15_000, using: &generator)))
        }
        consumer.cancel()
        _ = try? await consumer.value
        await pool.close()
        latencies.sort()
        results.add("lat.direct.p50", "1. DBWatch pool: write → observed value, p50", percentile(latencies, 0.5), "ms")
        results.add("lat.direct.p99", "1. DBWatch pool: write → observed value, p99", percentile(latencies, 0.99), "ms")
    }

    /// A single-row `UPDATE` committed in PostgreSQL (`BEGIN`, `UPDATE`,
    /// then `COMMIT` timed), observed on a replica that PostgreSQL streams to.
    func latencyReplica(key: String) async throws {
        let table = newTable("item")
        _ = try await client.query(
            PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (id bigint PRIMARY KEY, v bigint NOT NULL, note text)"))
        _ = try await client.query(PostgresQuery(unsafeSQL: "INSERT INTO \(table) VALUES (1, 0, 'latency')"))
        let pool = try DatabasePool(path: newFile("latency-replica"))
        let replica = try await startReplica(table: table, pool: pool) { _ in }
        let probe = LatencyProbe()
        let consumer = Task {
            for try await value in pool.observe(RowValue(table: table, id: 1)) { probe.deliver(value) }
        }
        var generator = SeededGenerator(seed: 19)
        var latencies: [Double] = []
        var commits: [Double] = []
        do {
            _ = try await probe.stamp(of: 0)
            try await client.withConnection { connection in
                let update = "UPDATE \(table) SET v = $1 WHERE id = 1"
                for value in 1...(options.commits + options.warmup) {
                    try await connection.query("BEGIN", logger: quietLogger)
                    var binds = PostgresBindings()
                    binds.append(Int64(value))
                    try await connection.query(PostgresQuery(unsafeSQL: update, binds: binds), logger: quietLogger)
                    let start = nowNanoseconds()
                    try await connection.query("COMMIT", logger: quietLogger)
                    let committed = nowNanoseconds()
                    let received = try await probe.stamp(of: value)
                    if value > options.warmup {
                        latencies.append(milliseconds(received - start))
                        commits.append(milliseconds(committed - start))
                    }
                    try await Task.sleep(for: .microseconds(Int.random(in: 5_000...15_000, using: &generator)))
                }
            }
        } catch {
            consumer.cancel()
            try? await replica.stop()
            await pool.close()
            throw error
        }
        consumer.cancel()
        _ = try? await consumer.value
        try await replica.stopAndRemove()
        await pool.close()
        _ = try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
        latencies.sort()
        commits.sort()
        let label = "replica (streamed)"
        results.add(
            "lat.\(key).p50", "1. PostgreSQL COMMIT → observed on \(label), p50", percentile(latencies, 0.5), "ms")
        results.add(
            "lat.\(key).p99", "1. PostgreSQL COMMIT → observed on \(label), p99", percentile(latencies, 0.99), "ms")
        results.add(
            "lat.\(key).commit.p50", "   PostgreSQL COMMIT round trip alone, p50", percentile(commits, 0.5), "ms")
        results.add(
            "lat.\(key).commit.p99", "   PostgreSQL COMMIT round trip alone, p99", percentile(commits, 0.99), "ms")
    }
}
