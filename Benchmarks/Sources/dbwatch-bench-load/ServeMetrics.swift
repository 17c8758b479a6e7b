import BenchProcess
import Foundation

/// `dbwatch serve`'s fan-out with `--metrics` off and on (issue 28), in one
/// run: `clients` clients of one query, the board written by this process.
/// With metrics on, this process scrapes `/metrics` every second while the
/// writes are measured (Prometheus scrapes every 15 s by default: a
/// pessimistic load), so the scrape's own cost is in the numbers; a third
/// server has metrics on and is never scraped.
extension ScenarioRun {
    /// The three modes, in an order that turns with `run`: off, on and
    /// scraped every second, on and never scraped (what the reporting
    /// itself costs, without the scrapes' requests).
    func metricsModes(run: Int) -> [(name: String, arguments: [String], scraped: Bool)] {
        let modes = [
            ("metrics off", [String](), false), ("metrics on", ["--metrics"], true),
            ("metrics unscraped", ["--metrics"], false),
        ]
        let shift = (run - 1) % modes.count
        return Array(modes[shift...] + modes[..<shift])
    }

    /// Both modes one after the other, each on a fresh board and server.
    func serveMetrics(run: Int) async throws {
        guard FileManager.default.isExecutableFile(atPath: options.dbwatch) else {
            throw LoadError(description: "no dbwatch executable at \(options.dbwatch): build it or pass --dbwatch PATH")
        }
        for mode in metricsModes(run: run) {
            progress("  \(mode.name)")
            let directory = try ServerProcess.temporaryDirectory()
            let writer = try ExternalWriter(path: directory + "/board.sqlite")
            defer { writer.close() }
            let arguments =
                ["serve", directory + "/board.sqlite", "--port", "0", "--quiet", "--query", "board=\(Self.serveQuery)"]
            let server = try ServerProcess(
                executable: options.dbwatch, arguments: arguments + mode.arguments,
                directory: directory, name: "dbwatch serve (\(mode.name))", port: Self.servedPort)
            defer { server.stop() }
            let label = "metrics \(clients) \(mode.name)"
            let recorder = Recorder(clients: clients)
            let channels = try await connectClients(
                count: clients, path: { _ in "/queries/board/events" }, port: server.port, group: group,
                recorder: recorder, marker: Array(#""round:"#.utf8))
            try await Task.sleep(for: .milliseconds(500))
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
            if let scrapes = await scraper?.value { results.add("\(label): scrapes", Double(scrapes)) }
            await closeClients(channels)
        }
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
                for mode in ["on", "unscraped"] {
                    if let on = last("metrics \(count) metrics \(mode): \(measure)"),
                        let off = last("metrics \(count) metrics off: \(measure)"), off > 0
                    {
                        add("metrics \(count): \(mode) / off, \(measure.prefix { $0 != "," }), %", 100 * on / off)
                    }
                }
            }
        }
    }
}
