import BenchProcess
import Foundation
import NIOCore
import NIOPosix

/// Command-line options.
struct LoadOptions {
    var runs = 1
    var clients = [1_000, 10_000]
    var writes = 20
    /// The time from one measured write's start to the next's.
    var writeInterval: Duration = .seconds(1)
    /// Also `dbwatch serve` built from other code, for serve-metrics (metrics off).
    var beforeDbwatch = ""
    var only: Set<String> = []
    var server = ""
    var dbwatch = ""
    /// Also a baseline whose clients' write loops run in child tasks, as DBWatch's do.
    var childTaskBaseline = false
    /// Also the floor of issue 25: `dbwatch-bench-floor` (plain SwiftNIO).
    var floor = false
    var floorServer = ""
    /// Also a `dbwatch-bench-server` built from other code (the code before a change), mode `dbwatch`.
    var beforeServer = ""
    /// The fan-out without workload 4 (the write rates around it): latency and memory only.
    var skipWriteRates = false

    static let usage = """
        usage: dbwatch-bench-load [--runs N] [--clients 1000,10000] [--writes N] [--write-interval MS]
                                 [--only fanout,rows,serve,serve-auth,serve-metrics,serve-metrics-phases]
                                 [--server PATH] [--dbwatch PATH] [--before-dbwatch PATH] [--child-task-baseline]
                                 [--floor] [--floor-server PATH] [--before-server PATH] [--skip-write-rates]

          --runs N      run each scenario N times; print median [min – max]
          --clients L   numbers of SSE clients (each also needs one open file here and one in the server)
          --writes N    measured writes per fan-out (one per interval, after 2 unmeasured; at most 1,000)
          --write-interval MS  from one write's start to the next's (default 1000; a write whose
                        fan-out takes longer waits for it)
          --only L      fanout (workloads 1, 3 and 4 on the shared query), rows (workloads 2 and 4),
                        serve (issue 17: `dbwatch serve`, writes by this process; only when named),
                        serve-auth (issue 24: `dbwatch serve` without auth, with a token, with a JWT;
                        only when named), serve-metrics (issue 28: `dbwatch serve` with --metrics off,
                        on and scraped every second, on and never scraped; only when named),
                        serve-metrics-phases (issue 28: one `dbwatch serve --metrics`, phases of writes
                        scraped every second or never, alternately; only when named)
          --server P    the dbwatch-bench-server executable (default: next to this one)
          --dbwatch P   the dbwatch executable, for serve (default: next to this one, else
                        .build/release/dbwatch in the current directory)
          --before-dbwatch P  also a dbwatch built from other code, in serve-metrics with metrics off
                        (`metrics off, before`)
          --child-task-baseline  also a baseline whose clients write from a child task, as DBWatch's do
          --floor       also the floor (issue 25): dbwatch-bench-floor, plain SwiftNIO, one fetch per
                        write and the same buffer written to every client
          --floor-server P  the dbwatch-bench-floor executable (default: next to this one)
          --before-server P  also a dbwatch-bench-server built from other code (e.g. a worktree of the
                        commit before a change), run in mode dbwatch as `dbwatch-before`
          --skip-write-rates  fanout without workload 4 (the write rates before and after the
                        fan-outs): latency, CPU and memory only, about 25 s less per server

        With more than the two fan-out servers, each run starts them in another order (rotated by one).

        Starts dbwatch-bench-server (and dbwatch serve) processes on 127.0.0.1 (a new one for each
        mode and number of clients), connects the clients, writes, stops the
        server by its PID. Every loop is bounded in count and time.
        """

    init(arguments: [String]) throws {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        server = directory.appendingPathComponent("dbwatch-bench-server").path
        floorServer = directory.appendingPathComponent("dbwatch-bench-floor").path
        dbwatch = directory.appendingPathComponent("dbwatch").path
        if !FileManager.default.isExecutableFile(atPath: dbwatch) { dbwatch = ".build/release/dbwatch" }
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument == "--child-task-baseline" {
                childTaskBaseline = true
                continue
            }
            if argument == "--floor" {
                floor = true
                continue
            }
            if argument == "--skip-write-rates" {
                skipWriteRates = true
                continue
            }
            if argument == "-h" || argument == "--help" {
                print(Self.usage)
                exit(0)
            }
            guard let value = iterator.next() else { throw LoadError(description: "\(argument) needs a value") }
            switch argument {
            case "--runs": runs = max(Int(value) ?? 1, 1)
            case "--clients": clients = value.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
            case "--writes": writes = min(max(Int(value) ?? 20, 1), 1_000)
            case "--write-interval": writeInterval = .milliseconds(min(max(Int(value) ?? 1_000, 50), 10_000))
            case "--only": only = Set(value.split(separator: ",").map(String.init))
            case "--server": server = value
            case "--dbwatch": dbwatch = value
            case "--floor-server": floorServer = value
            case "--before-server": beforeServer = value
            case "--before-dbwatch": beforeDbwatch = value
            default: throw LoadError(description: "unknown option \(argument)\n\(Self.usage)")
            }
        }
        if clients.isEmpty { throw LoadError(description: "--clients needs positive numbers") }
    }
}

@main
struct LoadMain {
    static func main() async {
        do {
            let options = try LoadOptions(arguments: Array(CommandLine.arguments.dropFirst()))
            try await run(options)
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ options: LoadOptions) async throws {
        let needed = (options.clients.max() ?? 0) + 200
        let limit = raiseFileLimit()
        guard limit >= needed else {
            throw LoadError(
                description: """
                    the open-files limit is \(limit) after raising it to the hard limit (ulimit -Hn); \
                    \(needed - 200) clients need at least \(needed) here and in the server. \
                    Raise the hard limit (as root: ulimit -Hn \(needed), or /etc/security/limits.conf) or pass fewer --clients.
                    """)
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let results = Results()
        print(
            "DBWatch server benchmarks: \(ProcessInfo.processInfo.activeProcessorCount) cores, open-files limit \(limit), "
                + "\(options.runs) run\(options.runs == 1 ? "" : "s"), clients \(options.clients), "
                + "\(options.writes) measured writes per fan-out")
        let scenarios =
            options.only.isEmpty
            ? ["fanout", "rows"]
            : ["fanout", "rows", "serve", "serve-auth", "serve-metrics", "serve-metrics-phases"].filter(
                options.only.contains)
        for run in 1...options.runs {
            for scenario in scenarios {
                for clients in options.clients {
                    progress("[\(scenario) \(clients)] run \(run)/\(options.runs) (load average \(loadAverage()))")
                    let scenarioResults = ScenarioRun(
                        options: options, group: group, clients: clients, results: results)
                    switch scenario {
                    case "fanout": try await scenarioResults.fanOut(run: run)
                    case "rows": try await scenarioResults.rows()
                    case "serve-auth": try await scenarioResults.serveAuthentication(run: run)
                    case "serve-metrics": try await scenarioResults.serveMetrics(run: run)
                    case "serve-metrics-phases": try await scenarioResults.serveMetricsPhases(run: run)
                    default: try await scenarioResults.serve()
                    }
                }
            }
            results.derive(clients: options.clients)
            results.deriveAuthentication(clients: options.clients)
            results.deriveMetrics(clients: options.clients)
        }
        results.print()
        try await group.shutdownGracefully()
    }
}

/// One scenario with one number of clients; adds its numbers to `results`.
struct ScenarioRun {
    let options: LoadOptions
    let group: any EventLoopGroup
    let clients: Int
    let results: Results

    /// One server of the fan-out: `name` in the results, its executable and `--mode`.
    struct FanOutServer {
        let name: String
        let executable: String
        let mode: String
    }

    /// The fan-out's servers, in the order of run `run` (1-based): the
    /// baseline and DBWatch, then the optional ones; with more than two,
    /// each run starts one place further in the list.
    func fanOutServers(run: Int) -> [FanOutServer] {
        var servers = [
            FanOutServer(name: "baseline", executable: options.server, mode: "baseline"),
            FanOutServer(name: "dbwatch", executable: options.server, mode: "dbwatch"),
        ]
        if options.floor {
            servers.append(FanOutServer(name: "floor", executable: options.floorServer, mode: "floor"))
        }
        if !options.beforeServer.isEmpty {
            servers.append(FanOutServer(name: "dbwatch-before", executable: options.beforeServer, mode: "dbwatch"))
        }
        if options.childTaskBaseline {
            servers.append(FanOutServer(name: "baseline-task", executable: options.server, mode: "baseline-task"))
        }
        guard servers.count > 2 else { return servers }
        let shift = (run - 1) % servers.count
        return Array(servers[shift...] + servers[..<shift])
    }

    /// Workloads 1, 3 and 4 on the shared query: the baseline server, then
    /// the DBWatch server (and the optional ones), each with `clients`
    /// clients of `/board/events`.
    func fanOut(run: Int = 1) async throws {
        for fanOutServer in fanOutServers(run: run) {
            let mode = fanOutServer.mode
            let server = try ServerProcess(executable: fanOutServer.executable, mode: mode, rows: 1)
            defer { server.stop() }
            let control = HTTPControl(port: server.port, group: group)
            let label = "fanout \(clients) \(fanOutServer.name)"
            progress("  \(label): starts at load average \(loadAverage())")
            var round = 0
            if mode == "dbwatch" {
                try await warmUp(control)
            }
            if mode == "dbwatch" && !options.skipWriteRates {
                round = 1_000_000
                let rate = try await control.throughput(connections: 4, seconds: 3) { worker, index in
                    "/board/write/\(1_000_000 + worker * 100_000 + index)"
                }
                results.add("\(label): writes/s, no client", rate)
                results.add("\(label): unobserved writes/s, no client", try await unobservedThroughput(control))
                results.add("\(label): in-process writes/s, no client", try await control.burst("board"))
                results.add("\(label): in-process unobserved writes/s, no client", try await control.burst("log"))
                round = 2_000_000
                _ = try await control.write("/board/write/\(round)")
            }
            let before = try await control.stats()
            let recorder = Recorder(clients: clients)
            let start = nowNanoseconds()
            let channels = try await connectClients(
                count: clients, path: { _ in "/board/events" }, port: server.port, group: group, recorder: recorder)
            results.add("\(label): connect+first value, s", Double(nowNanoseconds() - start) / 1e9)
            try await Task.sleep(for: .milliseconds(500))
            let idle = try await control.stats()
            results.add("\(label): RSS per idle client, B", Double(idle.rss - before.rss) / Double(clients))
            var cpuStart = idle.cpu
            try await measureFanOut(label: label, recorder: recorder, after: round) {
                cpuStart = try await control.stats().cpu
            } write: { round in
                try await control.write("/board/write/\(round)")
            }
            let after = try await control.stats()
            results.add(
                "\(label): server CPU per write, ms", Double(after.cpu - cpuStart) / 1e6 / Double(options.writes))
            if options.skipWriteRates {
                // Workload 4 not measured.
            } else if mode == "dbwatch" {
                let rate = try await control.throughput(connections: 4, seconds: 3) { worker, index in
                    "/board/write/\(3_000_000 + worker * 100_000 + index)"
                }
                results.add("\(label): writes/s, clients connected", rate)
                // Let the clients catch up before the next measure.
                try await Task.sleep(for: .seconds(1))
                results.add(
                    "\(label): unobserved writes/s, clients connected", try await unobservedThroughput(control))
                results.add("\(label): in-process writes/s, clients connected", try await control.burst("board"))
                try await Task.sleep(for: .seconds(1))
                results.add(
                    "\(label): in-process unobserved writes/s, clients connected", try await control.burst("log"))
            } else {
                // The same HTTP load of writes against the baseline: each a broadcast.
                let rate = try await control.throughput(connections: 4, seconds: 3) { worker, index in
                    "/board/write/\(1_000_000 + worker * 100_000 + index)"
                }
                results.add("\(label): broadcasts/s (POST), clients connected", rate)
            }
            await closeClients(channels)
        }
    }

    /// Workload 1's fan-outs: 2 writes, then `options.writes` measured, one
    /// per second, each waiting (5 s at most) until every client has its
    /// value. `write(r)` makes one that sets the board's round to `r`
    /// (`round` plus 1, 2, …) and returns its commit time; `beforeMeasured`
    /// runs before the first measured write. Adds commit to last client, commit
    /// to each client and the missed deliveries.
    func measureFanOut(
        label: String, recorder: Recorder, after round: Int, beforeMeasured: () async throws -> Void,
        write: (Int) async throws -> UInt64
    ) async throws {
        var lastLatencies: [Double] = []
        var eachLatencies: [Double] = []
        var missed = 0
        for index in 0..<(options.writes + 2) {
            if index == 2 { try await beforeMeasured() }
            let started = nowNanoseconds()
            recorder.arm(round: round + index + 1)
            let commit = try await write(round + index + 1)
            let deadline = nowNanoseconds() + 5_000_000_000
            while recorder.counts.reached < clients && nowNanoseconds() < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            let receipts = recorder.receipts
            if index >= 2 {
                missed += clients - receipts.count
                let latencies = receipts.map { Double($0 &- commit) / 1e6 }
                eachLatencies += latencies
                lastLatencies.append(latencies.max() ?? .infinity)
            }
            // One write per interval.
            let elapsed = Duration.nanoseconds(nowNanoseconds() - started)
            if elapsed < options.writeInterval { try await Task.sleep(for: options.writeInterval - elapsed) }
        }
        results.addPercentiles("\(label): commit to last client", lastLatencies)
        results.addPercentiles("\(label): commit to each client", eachLatencies)
        results.add("\(label): missed deliveries", Double(missed))
    }

    /// ``measureFanOut(label:recorder:after:beforeMeasured:write:)`` of
    /// `dbwatch serve`, written by `writer` from this process, and the
    /// server's CPU per measured write.
    func measureServeFanOut(
        label: String, recorder: Recorder, server: ServerProcess, writer: ExternalWriter, after round: Int = 0
    ) async throws {
        var cpuStart = server.cpuNanoseconds
        try await measureFanOut(label: label, recorder: recorder, after: round) {
            cpuStart = server.cpuNanoseconds
        } write: { round in
            try writer.write(round: round)
        }
        results.add(
            "\(label): server CPU per write, ms",
            Double(server.cpuNanoseconds - cpuStart) / 1e6 / Double(options.writes))
    }

    /// A second of writes, not measured: the server's first requests are slower.
    func warmUp(_ control: HTTPControl) async throws {
        _ = try await control.throughput(connections: 4, seconds: 1) { worker, index in
            "/log/write/\(-1 - worker * 1_000_000 - index)"
        }
    }

    /// Workload 4's inserts into a table that no client observes: what
    /// connected clients cost the write path itself.
    func unobservedThroughput(_ control: HTTPControl) async throws -> Double {
        try await control.throughput(connections: 4, seconds: 3) { worker, index in
            "/log/write/\(worker * 1_000_000 + index)"
        }
    }

    /// Workloads 2 and 4: `clients` clients, each observing its own row.
    func rows() async throws {
        let server = try ServerProcess(executable: options.server, mode: "dbwatch", rows: clients)
        defer { server.stop() }
        let control = HTTPControl(port: server.port, group: group)
        let clients = clients
        let label = "rows \(clients)"
        try await warmUp(control)
        let rate = try await control.throughput(connections: 4, seconds: 3) { worker, index in
            "/item/\((worker * 7_919 + index * 104_729) % clients + 1)/write/\(1_000_000 + worker * 100_000 + index)"
        }
        results.add("\(label): writes/s, no client", rate)
        results.add("\(label): unobserved writes/s, no client", try await unobservedThroughput(control))
        results.add("\(label): in-process writes/s, no client", try await control.burst("item"))
        results.add("\(label): in-process unobserved writes/s, no client", try await control.burst("log"))
        let before = try await control.stats()
        let recorder = Recorder(clients: clients)
        let start = nowNanoseconds()
        let channels = try await connectClients(
            count: clients, path: { "/item/\($0 + 1)/events" }, port: server.port, group: group, recorder: recorder)
        results.add("\(label): connect+first value, s", Double(nowNanoseconds() - start) / 1e9)
        try await Task.sleep(for: .milliseconds(500))
        let idle = try await control.stats()
        results.add("\(label): RSS per idle client, B", Double(idle.rss - before.rss) / Double(clients))
        // Latency: one write at a time to a random row, waiting for its client.
        var latencies: [Double] = []
        var round = 2_000_000
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            round += 1
            let client = Int.random(in: 0..<clients, using: &generator)
            recorder.arm(round: round)
            let commit = try await control.write("/item/\(client + 1)/write/\(round)")
            let deadline = nowNanoseconds() + 2_000_000_000
            while recorder.time(of: client) == 0 && nowNanoseconds() < deadline {
                try await Task.sleep(for: .microseconds(200))
            }
            let time = recorder.time(of: client)
            latencies.append(time == 0 ? .infinity : Double(time &- commit) / 1e6)
            try await Task.sleep(for: .milliseconds(10))
        }
        results.addPercentiles("\(label): commit to its client", latencies)
        // CPU per write: 300 writes to random rows on one connection, then the
        // server's CPU time and fetches over them.
        let cpuBefore = try await control.stats()
        let burst = 300
        let connection = try await control.connect()
        try await connection.executeThenClose { inbound, outbound in
            var responses = inbound.makeAsyncIterator()
            for _ in 0..<burst {
                round += 1
                let client = Int.random(in: 0..<clients, using: &generator)
                _ = try await HTTPControl.exchange(
                    .POST, "/item/\(client + 1)/write/\(round)", outbound: outbound, responses: &responses)
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        let cpuAfter = try await control.stats()
        results.add("\(label): server CPU per write, µs", Double(cpuAfter.cpu - cpuBefore.cpu) / 1e3 / Double(burst))
        results.add("\(label): fetches per write", Double(cpuAfter.fetches - cpuBefore.fetches) / Double(burst))
        results.add("\(label): values sent per write", Double(cpuAfter.sent - cpuBefore.sent) / Double(burst))
        let loaded = try await control.throughput(connections: 4, seconds: 3) { worker, index in
            "/item/\((worker * 7_919 + index * 104_729) % clients + 1)/write/\(3_000_000 + worker * 100_000 + index)"
        }
        results.add("\(label): writes/s, clients connected", loaded)
        results.add("\(label): unobserved writes/s, clients connected", try await unobservedThroughput(control))
        results.add("\(label): in-process writes/s, clients connected", try await control.burst("item"))
        results.add("\(label): in-process unobserved writes/s, clients connected", try await control.burst("log"))
        await closeClients(channels)
    }
}

/// Every number of every run, by key, printed as median [min – max].
final class Results {
    private var keys: [String] = []
    private var values: [String: [Double]] = [:]

    func add(_ key: String, _ value: Double) {
        if values[key] == nil { keys.append(key) }
        values[key, default: []].append(value)
        FileHandle.standardError.write(Data("  \(key): \(format(value))\n".utf8))
    }

    func addPercentiles(_ key: String, _ samples: [Double]) {
        let sorted = samples.sorted()
        guard !sorted.isEmpty else { return }
        add("\(key) p50, ms", percentile(sorted, 0.5))
        add("\(key) p99, ms", percentile(sorted, 0.99))
    }

    func last(_ key: String) -> Double? { values[key]?.last }

    /// The ratios of one run, from its own numbers.
    func derive(clients: [Int]) {
        for count in clients {
            let base = "fanout \(count)"
            if let dbwatch = last("\(base) dbwatch: commit to last client p50, ms"),
                let baseline = last("\(base) baseline: commit to last client p50, ms")
            {
                // Rate = clients / (commit to last client): deliveries per second of one fan-out.
                add("\(base): DBWatch rate / baseline rate, %", 100 * baseline / dbwatch)
            }
            if let dbwatch = last("\(base) dbwatch: RSS per idle client, B"),
                let baseline = last("\(base) baseline: RSS per idle client, B")
            {
                add("\(base): RSS per client, DBWatch / baseline, %", 100 * dbwatch / baseline)
                add("\(base): DBWatch's share per client, B", dbwatch - baseline)
            }
            deriveFloorAndBefore(base: base)
            if let loaded = last("\(base) dbwatch: writes/s, clients connected"),
                let none = last("\(base) dbwatch: writes/s, no client")
            {
                add("\(base): writes/s with clients / without, %", 100 * loaded / none)
            }
            for scenario in ["\(base) dbwatch", "rows \(count)"] {
                for measure in ["unobserved writes/s", "in-process writes/s", "in-process unobserved writes/s"] {
                    if let loaded = last("\(scenario): \(measure), clients connected"),
                        let none = last("\(scenario): \(measure), no client")
                    {
                        add("\(scenario): \(measure) with clients / without, %", 100 * loaded / none)
                    }
                }
            }
            if let loaded = last("rows \(count): writes/s, clients connected"),
                let none = last("rows \(count): writes/s, no client")
            {
                add("rows \(count): writes/s with clients / without, %", 100 * loaded / none)
            }
        }
        for count in clients {
            for measure in ["p50", "p99"] {
                if let external = last(
                    "serve \(count) dbwatch serve, external writes: commit to last client \(measure), ms"),
                    let inProcess = last(
                        "serve \(count) in-process DBWatch, POST writes: commit to last client \(measure), ms")
                {
                    add(
                        "serve \(count): external − in-process, commit to last client \(measure), ms",
                        external - inProcess)
                }
            }
        }
        if let small = clients.min(), let large = clients.max(), small != large,
            let cpuSmall = last("rows \(small): server CPU per write, µs"),
            let cpuLarge = last("rows \(large): server CPU per write, µs")
        {
            add("rows: CPU per write at \(large) / at \(small), %", 100 * cpuLarge / cpuSmall)
        }
    }

    /// Issue 25's ratios of one run: the code before the change
    /// (`dbwatch-before`) against the baseline and against the code after
    /// (`dbwatch`), and every server against the floor, when they ran.
    private func deriveFloorAndBefore(base: String) {
        if let before = last("\(base) dbwatch-before: RSS per idle client, B"),
            let baseline = last("\(base) baseline: RSS per idle client, B")
        {
            add("\(base): RSS per client, DBWatch before / baseline, %", 100 * before / baseline)
            add("\(base): DBWatch's share per client before, B", before - baseline)
        }
        if let floor = last("\(base) floor: RSS per idle client, B"),
            let baseline = last("\(base) baseline: RSS per idle client, B")
        {
            add("\(base): RSS per client, floor / baseline, %", 100 * floor / baseline)
        }
        let latencies = [
            "commit to each client p50", "commit to each client p99", "commit to last client p50",
            "commit to last client p99",
        ]
        for measure in latencies.map({ "\($0), ms" }) + ["RSS per idle client, B", "server CPU per write, ms"] {
            if let after = last("\(base) dbwatch: \(measure)"), let before = last("\(base) dbwatch-before: \(measure)")
            {
                add("\(base): after / before, \(measure.prefix { $0 != "," }), %", 100 * after / before)
            }
        }
        for name in ["dbwatch", "dbwatch-before", "baseline"] {
            for measure in latencies {
                if let value = last("\(base) \(name): \(measure), ms"),
                    let floor = last("\(base) floor: \(measure), ms")
                {
                    add("\(base): \(name) / floor, \(measure), ×", value / floor)
                }
            }
        }
    }

    func print() {
        Swift.print("| measure | median | min – max |")
        Swift.print("|---|---:|---:|")
        for key in keys {
            let sorted = (values[key] ?? []).sorted()
            guard !sorted.isEmpty else { continue }
            Swift.print(
                "| \(key) | \(format(sorted[sorted.count / 2])) | \(format(sorted[0])) – \(format(sorted[sorted.count - 1])) |"
            )
        }
    }

    private func format(_ value: Double) -> String {
        if !value.isFinite { return "∞" }
        if abs(value) >= 100 { return String(format: "%.0f", value) }
        if abs(value) >= 10 { return String(format: "%.1f", value) }
        return String(format: "%.2f", value)
    }
}

/// The `p`-th percentile (0...1) of sorted values, nearest rank.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

func progress(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// The 1-minute load average, from /proc/loadavg.
func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
}
