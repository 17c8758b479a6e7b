import CSQLiteRaw
import DBWatch
import Foundation

// MARK: - External changes (issue "observe writes made by other connections")

/// Delay from a commit by another connection to the observed value, with
/// inotify and with the poll only; and the CPU an idle watched database costs.
///
/// The other writer is a raw SQLite connection in this process: for the
/// detection (`PRAGMA data_version` on DBWatch's writer, inotify on the
/// folder) it is exactly another connection; a second process only adds its
/// start-up time, and the tests cover real processes.
func externalChanges(_ sizes: Sizes) async throws -> [Sample] {
    let scratch = ScratchDirectory("external")
    defer { scratch.remove() }
    var samples: [Sample] = []
    let commits = sizes.latencyCommits / 10

    for (label, detection) in [
        ("inotify", ExternalChangeDetection()),
        ("poll-50ms", ExternalChangeDetection(pollInterval: .milliseconds(50), usesFileNotifications: false)),
    ] {
        let path = scratch.file("\(label).sqlite")
        var configuration = Configuration()
        configuration.externalChangeDetection = detection
        let pool = try DatabasePool(path: path, configuration: configuration)
        defer { pool.close() }
        try await pool.write { db in try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        }
        let other = try RawDatabase(path: path)
        let insert = try other.prepare("INSERT INTO t (v) VALUES (1)")
        let probe = LatencyProbe()
        let consumer = Task {
            for try await count in pool.observe(TableCount(table: "t", salt: 0)) { probe.deliver(count) }
        }
        _ = await probe.stamp(of: 0)
        let rounds = label == "inotify" ? commits : min(commits, 40)
        var delays: [Double] = []
        for index in 0..<rounds {
            insert.run()  // autocommit: the commit has returned when run() does
            let committed = nowNanoseconds()
            let received = await probe.stamp(of: index + 1)
            delays.append(Double(Int64(bitPattern: received &- committed)) / 1000)
        }
        await stop([consumer])
        delays.sort()
        // With inotify: under 10 ms. Polling every 50 ms: within the interval
        // (plus the fetch), the commit landing just after a check.
        let target: Target = label == "inotify" ? .below(10_000) : .below(60_000)
        samples.append(
            Sample(
                "external.\(label).p50", "external commit → value (\(label)), p50", value: percentile(delays, 0.5),
                unit: "µs", target: target, higherIsBetter: false))
        samples.append(
            Sample(
                "external.\(label).p99", "external commit → value (\(label)), p99", value: percentile(delays, 0.99),
                unit: "µs", target: target, higherIsBetter: false))
    }

    // Idle CPU: a watched pool with 100 observations and nothing changing.
    for (label, detection) in [
        ("detection on", ExternalChangeDetection() as ExternalChangeDetection?), ("detection off", nil),
    ] {
        var configuration = Configuration()
        configuration.externalChangeDetection = detection
        let pool = try DatabasePool(path: scratch.file("idle-\(label.hashValue).sqlite"), configuration: configuration)
        defer { pool.close() }
        try await pool.write { db in try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)") }
        var consumers: [Task<Void, any Error>] = []
        let delivered = Counter()
        for salt in 0..<100 {
            consumers.append(
                Task { for try await _ in pool.observe(TableCount(table: "t", salt: salt)) { delivered.increment() } })
        }
        try await waitUntil("first values") { delivered.current >= 100 }
        let cpuBefore = processCPUSeconds()
        let wallBefore = nowNanoseconds()
        try await Task.sleep(for: .seconds(sizes.latencyCommits >= 1_000 ? 3 : 1))
        let cpu = processCPUSeconds() - cpuBefore
        let wall = seconds(since: wallBefore)
        await stop(consumers)
        samples.append(
            Sample(
                "external.idle-cpu.\(label)", "idle CPU, 100 observations, \(label)", value: cpu / wall * 100,
                unit: "% of a core", target: .below(1), higherIsBetter: false))
    }
    return samples
}

/// User + system CPU time of this process, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
}
