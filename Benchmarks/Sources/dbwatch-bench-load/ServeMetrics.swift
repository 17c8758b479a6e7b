import BenchProcess
import Foundation
import NIOCore

/// `dbwatch serve`'s fan-out with `--metrics` off and on (issue 28), in one
/// run: `clients` clients of one query, the board written by this process.
/// With metrics on, this process scrapes `/metrics` every second while the
/// writes are measured (Prometheus scrapes every 15 s by default: a
/// pessimistic load), so the scrape's own cost is in the numbers; a third
/// server has metrics on and is never scraped. The server with metrics on
/// then answers 200 scrapes in a row: the CPU of one scrape.
extension ScenarioRun {
    /// One server of the scenario.
    struct MetricsMode {
        let name: String
        let executable: String
        let arguments: [String]
        let scraped: Bool
    }

    /// The modes, in an order that turns with `run`: off, on and scraped
    /// every second, on and never scraped (what the reporting itself
    /// costs, without the scrapes' requests), and with `--before-dbwatch`
    /// that build with metrics off.
    func metricsModes(run: Int) -> [MetricsMode] {
        var modes = [
            MetricsMode(name: "metrics off", executable: options.dbwatch, arguments: [], scraped: false),
            MetricsMode(name: "metrics on", executable: options.dbwatch, arguments: ["--metrics"], scraped: true),
            MetricsMode(
                name: "metrics unscraped", executable: options.dbwatch, arguments: ["--metrics"], scraped: false),
        ]
        if !options.beforeDbwatch.isEmpty {
            modes.append(
                MetricsMode(
                    name: "metrics off before", executable: options.beforeDbwatch, arguments: [], scraped: false))
        }
        let shift = (run - 1) % modes.count
        return Array(modes[shift...] + modes[..<shift])
    }

    /// Both modes one after the other, each on a fresh board and server.
    func serveMetrics(run: Int) async throws {
        for mode in metricsModes(run: run) {
            guard FileManager.default.isExecutableFile(atPath: mode.executable) else {
                throw LoadError(description: "no dbwatch executable at \(mode.executable): build it or pass its path")
            }
            progress("  \(mode.name)")
            let (writer, server) = try serveBoard(
                Self.boardQueryArguments + mode.arguments, executable: mode.executable,
                name: "dbwatch serve (\(mode.name))")
            defer {
                server.stop()
                writer.close()
            }
            let label = "metrics \(clients) \(mode.name)"
            let (recorder, channels) = try await connectBoardClients(to: server)
            let control = HTTPControl(port: server.port, group: group)
            let scraper: Task<Int, Never>? =
                !mode.scraped
                ? nil
                : Task {
                    var scrapes = 0
                    while !Task.isCancelled {
                        if (try? await control.request(.GET, "/metrics")) != nil { scrapes += 1 }
                        try? await Task.sleep(for: .seconds(1))
                    }
                    return scrapes
                }
            try await measureServeFanOut(label: label, recorder: recorder, server: server, writer: writer)
            scraper?.cancel()
            if let scrapes = await scraper?.value {
                results.add("\(label): scrapes", Double(scrapes))
                // What one scrape costs the server, clients connected: 200 in a row.
                let count = 200
                let cpuStart = server.cpuNanoseconds
                for _ in 0..<count { _ = try await control.request(.GET, "/metrics") }
                results.add(
                    "\(label): server CPU per scrape, ms",
                    Double(server.cpuNanoseconds - cpuStart) / 1e6 / Double(count))
            }
            await closeClients(channels)
        }
    }
}

extension ScenarioRun {
    /// One `dbwatch serve --metrics` and its clients, and phases of
    /// `--writes` writes each, scraped every second or never, in the order
    /// scraped, unscraped, unscraped, scraped (twice): the on/off
    /// comparison without the differences between two server processes.
    /// Each adjacent pair of phases gives one ratio. Then, the clients
    /// idle, the CPU of a scrape a second against none.
    func serveMetricsPhases(run: Int) async throws {
        let (writer, server) = try serveBoard(
            Self.boardQueryArguments + ["--metrics"], name: "dbwatch serve --metrics (phases)")
        defer {
            server.stop()
            writer.close()
        }
        let (recorder, channels) = try await connectBoardClients(to: server)
        let control = HTTPControl(port: server.port, group: group)
        let order = [true, false, false, true, true, false, false, true]
        var measured: [(scraped: Bool, cpu: Double, each: Double, last: Double)] = []
        for (phase, scraped) in order.enumerated() {
            let label = "metrics phases \(clients) \(scraped ? "scraped" : "unscraped")"
            let scraper: Task<Void, Never>? =
                scraped
                ? Task {
                    while !Task.isCancelled {
                        _ = try? await control.request(.GET, "/metrics")
                        try? await Task.sleep(for: .seconds(1))
                    }
                } : nil
            try await measureServeFanOut(
                label: label, recorder: recorder, server: server, writer: writer,
                after: phase * (options.writes + 2))
            scraper?.cancel()
            await scraper?.value
            guard let cpu = results.last("\(label): server CPU per write, ms"),
                let each = results.last("\(label): commit to each client p50, ms"),
                let last = results.last("\(label): commit to last client p50, ms")
            else { continue }
            measured.append((scraped, cpu, each, last))
        }
        // The clients idle, no write: what a scrape a second costs the
        // server, against periods without one (alternately, 20 s each).
        var idle: [(scraped: Bool, cpu: Double, scrapes: Int)] = []
        for scraped in [true, false, false, true] {
            let start = server.cpuNanoseconds
            let started = nowNanoseconds()
            var scrapes = 0
            while nowNanoseconds() - started < 20_000_000_000 {
                if scraped, (try? await control.request(.GET, "/metrics")) != nil { scrapes += 1 }
                try await Task.sleep(for: .seconds(1))
            }
            idle.append((scraped, Double(server.cpuNanoseconds - start) / 1e6, scrapes))
        }
        let scrapedIdle = idle.filter(\.scraped)
        let unscrapedCPU = idle.filter { !$0.scraped }.reduce(0) { $0 + $1.cpu }
        let scrapes = scrapedIdle.reduce(0) { $0 + $1.scrapes }
        if scrapes > 0 {
            results.add(
                "metrics phases \(clients): idle, server CPU per scrape a second, ms",
                (scrapedIdle.reduce(0) { $0 + $1.cpu } - unscrapedCPU) / Double(scrapes))
            results.add("metrics phases \(clients): idle, server CPU without scrapes, ms/s", unscrapedCPU / 40)
        }
        try await measureScrapeBacklog(server: server, writer: writer, recorder: recorder, control: control)
        await closeClients(channels)
        // Pairs: (0, 1), (2, 3), ...: each a scraped and an unscraped phase.
        for pair in stride(from: 0, to: measured.count - 1, by: 2) {
            let (a, b) = (measured[pair], measured[pair + 1])
            guard a.scraped != b.scraped else { continue }
            let (on, off) = a.scraped ? (a, b) : (b, a)
            let base = "metrics phases \(clients): scraped / unscraped"
            results.add("\(base), server CPU per write, %", 100 * on.cpu / off.cpu)
            results.add("\(base), commit to each client p50, %", 100 * on.each / off.each)
            results.add("\(base), commit to last client p50, %", 100 * on.last / off.last)
        }
    }
}

extension ScenarioRun {
    /// What a scrape costs with values to record: the server's thread CPU
    /// (exact) of one scrape after `--writes` fan-outs without one, against
    /// scrapes with nothing new; per value written to a client since the
    /// last scrape (each one timer record of the commit-to-socket latency).
    func measureScrapeBacklog(
        server: ServerProcess, writer: ExternalWriter, recorder: Recorder, control: HTTPControl
    ) async throws {
        func scrapeCPU() async throws -> Double {
            let start = server.threadCPUNanoseconds
            _ = try await control.request(.GET, "/metrics")
            return Double(server.threadCPUNanoseconds - start)
        }
        var empty: [Double] = []
        for _ in 0..<20 { empty.append(try await scrapeCPU()) }
        let nothingNew = empty.sorted()[empty.count / 2]
        results.add("metrics phases \(clients): scrape with nothing new, thread CPU, µs", nothingNew / 1e3)
        for round in 0..<3 {
            try await measureServeFanOut(
                label: "metrics phases \(clients) backlog", recorder: recorder, server: server, writer: writer,
                after: 1_000_000 + round * (options.writes + 2))
            let values = Double((options.writes + 2) * clients)
            let backlog = try await scrapeCPU()
            results.add(
                "metrics phases \(clients): scrape's CPU per value to record, ns", (backlog - nothingNew) / values)
        }
    }

    /// `clients` clients of `server`'s board, connected, then half a second
    /// for the server to settle.
    func connectBoardClients(
        to server: ServerProcess
    ) async throws -> (Recorder, [any Channel]) {
        let recorder = Recorder(clients: clients)
        let channels = try await connectClients(
            count: clients, path: { _ in "/queries/board/events" }, port: server.port, group: group,
            recorder: recorder, marker: Array(#""round:"#.utf8))
        try await Task.sleep(for: .milliseconds(500))
        return (recorder, channels)
    }
}

extension Results {
    /// Metrics on against off, in the same run: latency and CPU per write,
    /// as percentages.
    func deriveMetrics(clients: [Int]) {
        for count in clients {
            for measure in [
                "commit to last client p50, ms", "commit to each client p50, ms", "commit to each client p99, ms",
                "server CPU per write, ms",
            ] {
                for mode in ["on", "unscraped", "off before"] {
                    if let on = last("metrics \(count) metrics \(mode): \(measure)"),
                        let off = last("metrics \(count) metrics off: \(measure)"), off > 0
                    {
                        add("metrics \(count): \(mode) / off, \(measure.prefix { $0 != "," }), %", 100 * on / off)
                    }
                }
            }
            // A scrape's CPU against a write's fan-out with metrics off: what
            // scraping once per write adds (a 15 s scrape interval, a
            // fifteenth of it at one write a second).
            if let scrape = last("metrics \(count) metrics on: server CPU per scrape, ms"),
                let write = last("metrics \(count) metrics off: server CPU per write, ms"), write > 0
            {
                add("metrics \(count): one scrape / one write's fan-out, CPU, %", 100 * scrape / write)
            }
        }
    }
}
