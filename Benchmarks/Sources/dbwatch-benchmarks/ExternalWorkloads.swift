import CSQLiteRaw
@_spi(Benchmarks) import DBWatch
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
        defer { pool.syncClose() }
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
        defer { pool.syncClose() }
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

// MARK: - A long-lived writer in another process (issue 15, part 8)

/// Delay from a commit by another process, which keeps one connection open
/// and commits one small insert every 20 ms, to the observed value; on a
/// machine left as it is and with the cores kept busy by CPU-bound
/// processes; with the writer at `synchronous = FULL` (SQLite's default, the
/// `sqlite3` shell's: an `fsync` of the WAL between writing a commit and
/// publishing it) and `NORMAL`; for each way of following a commit written to the WAL but not
/// yet published in `-shm` (``ExternalChangeDetection/InFlightCommits``).
/// The policies run interleaved, in blocks, each on its own pool and writer
/// process. The poll stays at its default 1 s: a commit that the inotify
/// path misses shows as a delay of up to 1 s.
///
/// The writer is this executable started again with `--external-writer`:
/// it stamps each commit with `CLOCK_MONOTONIC` (the same clock in every
/// process) once `sqlite3_step` has returned, so the delay runs from the end
/// of the commit to the value in the observing task (a value that arrives
/// before the writer took its stamp counts as 0).
func externalKeptWriter(_ sizes: Sizes) async throws -> [Sample] {
    let scratch = ScratchDirectory("external-writer")
    defer { scratch.remove() }
    let policies: [(key: String, label: String, policy: ExternalChangeDetection.InFlightCommits)] = [
        ("settle-once", "one check 3 ms after the event (before)", .settleOnce),
        ("backoff", "rechecks 1…64 ms after every event", .backoff),
        ("write-lock", "rechecks while the write lock is held (now)", .whileWriteLockHeld),
    ]
    let blocks = 4
    let commitsPerBlock = sizes.latencyCommits >= 1_000 ? 25 : 8
    var samples: [Sample] = []
    for (busy, synchronous) in [(false, "FULL"), (false, "NORMAL"), (true, "FULL"), (true, "NORMAL")] {
        var setups: [(pool: DatabasePool, writer: KeptWriter, probe: LatencyProbe, consumer: Task<Void, any Error>)] =
            []
        for (index, entry) in policies.enumerated() {
            let path = scratch.file("\(busy ? "busy" : "idle")-\(synchronous)-\(index).sqlite")
            var detection = ExternalChangeDetection()
            detection.inFlightCommits = entry.policy
            var configuration = Configuration()
            configuration.externalChangeDetection = detection
            let pool = try DatabasePool(path: path, configuration: configuration)
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
            }
            let probe = LatencyProbe()
            let consumer = Task {
                for try await count in pool.observe(TableCount(table: "t", salt: 0)) { probe.deliver(count) }
            }
            _ = await probe.stamp(of: 0)
            setups.append((pool, try KeptWriter(path: path, synchronous: synchronous), probe, consumer))
        }
        let load = busy ? try CPULoadProcesses(count: 2 * ProcessInfo.processInfo.activeProcessorCount) : nil
        var delays = Array(repeating: [Double](), count: policies.count)
        var commits = Array(repeating: 0, count: policies.count)
        for block in 0..<blocks {
            // Rotate which policy goes first in each block.
            for offset in 0..<policies.count {
                let index = (block + offset) % policies.count
                let setup = setups[index]
                for _ in 0..<commitsPerBlock {
                    setup.writer.requestCommit()
                    commits[index] += 1
                    let received = await setup.probe.stamp(of: commits[index])
                    let committed = try setup.writer.commitStamp()
                    delays[index].append(max(0, Double(Int64(bitPattern: received &- committed)) / 1000))
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
        }
        load?.stop()
        for setup in setups {
            setup.writer.stop()
            await stop([setup.consumer])
            await setup.pool.close()
        }
        let condition = "\(busy ? "cores busy" : "as is"), synchronous \(synchronous)"
        for (index, entry) in policies.enumerated() {
            let sorted = delays[index].sorted()
            let late = sorted.filter { $0 > 100_000 }.count
            let key = "external.kept-writer.\(busy ? "busy" : "idle").\(synchronous.lowercased()).\(entry.key)"
            let label = "\(condition): \(entry.label)"
            samples.append(
                Sample(
                    key + ".p50", label + ", p50", value: percentile(sorted, 0.5), unit: "µs", target: .below(10_000),
                    higherIsBetter: false))
            samples.append(
                Sample(
                    key + ".p99", "    p99", value: percentile(sorted, 0.99), unit: "µs", target: .below(100_000),
                    higherIsBetter: false))
            samples.append(
                Sample(
                    key + ".late", "    commits seen after 100 ms (of \(sorted.count))", value: Double(late),
                    unit: "commits", higherIsBetter: false))
        }
    }

    // What the detection costs the app's own writes (each raises an event,
    // and the check that follows finds nothing new): back-to-back inserts.
    let inserts = sizes.latencyCommits >= 1_000 ? 5_000 : 1_000
    var rates: [String: [Double]] = [:]
    let ownConfigurations: [(key: String, policy: ExternalChangeDetection.InFlightCommits?)] =
        [("off", nil)] + policies.map { ($0.key, $0.policy) }
    for round in 0..<4 {
        // Each configuration first, second, third and last once.
        for offset in 0..<ownConfigurations.count {
            let index = (round + offset) % ownConfigurations.count
            let entry = ownConfigurations[index]
            var configuration = Configuration()
            if let policy = entry.policy {
                var detection = ExternalChangeDetection()
                detection.inFlightCommits = policy
                configuration.externalChangeDetection = detection
            }
            let pool = try DatabasePool(
                path: scratch.file("own-\(round)-\(index).sqlite"), configuration: configuration)
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
            }
            let start = nowNanoseconds()
            for value in 0..<inserts {
                try await pool.write { db in try db.execute(sql: "INSERT INTO t (v) VALUES (?)", arguments: [value]) }
            }
            rates[entry.key, default: []].append(Double(inserts) / seconds(since: start))
            await pool.close()
        }
    }
    let reference = Summary.median(rates["off"]!)
    for entry in ownConfigurations {
        let best = Summary.median(rates[entry.key]!)
        samples.append(
            Sample(
                "external.own-writes.\(entry.key)",
                entry.policy == nil
                    ? "own writes, detection off" : "own writes, detection on: \(entry.key)",
                value: best, unit: "inserts/s", ratio: best / reference, against: "detection off"))
    }

    // One read of the kernel's lock table, as each check now does.
    let reads = 2_000
    let start = nowNanoseconds()
    var bytes = 0
    for _ in 0..<reads {
        bytes += (try? Data(contentsOf: URL(fileURLWithPath: "/proc/locks")).count) ?? 0
    }
    samples.append(
        Sample(
            "external.lock-table-read", "one read of /proc/locks (\(bytes / reads) bytes)",
            value: seconds(since: start) / Double(reads) * 1_000_000, unit: "µs", higherIsBetter: false))
    return samples
}

/// This executable started with `--external-writer PATH SYNCHRONOUS`: one raw SQLite
/// connection, kept open, that commits one insert per line it reads and
/// answers each with the `CLOCK_MONOTONIC` time at which the commit returned.
final class KeptWriter {
    private let process = Process()
    private let input: FileHandle
    private let output: FileHandle
    private var buffer: [UInt8] = []

    init(path: String, synchronous: String) throws {
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = ["--external-writer", path, synchronous]
        let inputPipe = Pipe()
        let outputPipe = Pipe()
        process.standardInput = inputPipe
        process.standardOutput = outputPipe
        try process.run()
        input = inputPipe.fileHandleForWriting
        output = outputPipe.fileHandleForReading
    }

    /// Asks for one commit, without waiting for it.
    func requestCommit() {
        input.write(Data("c\n".utf8))
    }

    /// When the requested commit returned in the writer (waits for its answer).
    func commitStamp() throws -> UInt64 {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                guard let stamp = UInt64(line) else { throw RawError(description: "writer said \(line)") }
                return stamp
            }
            let data = output.availableData
            if data.isEmpty { throw RawError(description: "the writer process ended") }
            buffer += data
        }
    }

    func stop() {
        try? input.close()
        process.waitUntilExit()
    }

    /// The writer's side: runs until standard input ends.
    static func main(path: String, synchronous: String) -> Never {
        do {
            let database = try RawDatabase(path: path)
            try database.execute("PRAGMA synchronous = \(synchronous)")
            let insert = try database.prepare("INSERT INTO t (v) VALUES (1)")
            while readLine() != nil {
                insert.run()
                print(nowNanoseconds())
                fflush(nil)
            }
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("external writer: \(error)\n".utf8))
            exit(1)
        }
    }
}

/// Processes that keep the cores busy (this executable with `--spin`), as a
/// build or a busy server does; `stop()` kills them.
final class CPULoadProcesses {
    private let processes: [Process]

    init(count: Int) throws {
        processes = try (0..<count).map { _ in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
            process.arguments = ["--spin"]
            try process.run()
            return process
        }
    }

    func stop() {
        for process in processes {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// The spinning side: arithmetic until killed.
    static func spin() -> Never {
        var x: UInt64 = 1
        while true {
            for _ in 0..<1_000_000 { x = x &* 6_364_136_223_846_793_005 &+ 1 }
            if x == 42 { print(x) }
        }
    }
}

/// User + system CPU time of this process, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
}
