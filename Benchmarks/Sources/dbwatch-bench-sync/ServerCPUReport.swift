import NIOCore

/// Workload 1's runs and table: whole values and the sync protocol in
/// alternating order, the ratio taken within each run.
struct ServerCPUReport {
    let options: SyncBenchOptions
    let group: any EventLoopGroup

    func run() async throws {
        let workload = ServerCPUWorkload(
            server: options.server, clients: options.clients, rows: options.rows, commits: options.commits,
            group: group)
        var whole: [ServerCPUWorkload.Measurement] = []
        var sync: [ServerCPUWorkload.Measurement] = []
        var ratios: [Double] = []
        for run in 0..<options.runs {
            let order: [ServerCPUWorkload.Delivery] = run % 2 == 0 ? [.wholeValues, .sync] : [.sync, .wholeValues]
            var results: [ServerCPUWorkload.Delivery: ServerCPUWorkload.Measurement] = [:]
            for delivery in order {
                results[delivery] = try await workload.measure(delivery)
                print(
                    "  cpu run \(run + 1), \(delivery.rawValue): \(results[delivery]!) load \(SyncServerProcess.loadAverage)"
                )
            }
            whole.append(results[.wholeValues]!)
            sync.append(results[.sync]!)
            ratios.append(results[.sync]!.cpuPerCommit / results[.wholeValues]!.cpuPerCommit)
        }
        print(
            """

            ### Server CPU per commit: \(options.clients) clients of one \(options.rows)-row leaderboard, \(options.commits) commits, \(options.runs) runs

            | | whole values | sync protocol | sync ÷ whole |
            |---|---|---|---|
            | server CPU per commit | \(whole.map(\.cpuPerCommit).summary(Format.milliseconds)) | \(sync.map(\.cpuPerCommit).summary(Format.milliseconds)) | **\(ratios.summary { Format.decimal($0, 3) })** |
            | wall time per commit (every client holds it) | \(whole.map(\.wallPerCommit).summary(Format.milliseconds)) | \(sync.map(\.wallPerCommit).summary(Format.milliseconds)) | \(zip(sync, whole).map { $0.wallPerCommit / $1.wallPerCommit }.summary { Format.decimal($0, 3) }) |
            | bytes per client per commit | \(whole.map(\.bytesPerClientPerCommit).summary(Format.bytes)) | \(sync.map(\.bytesPerClientPerCommit).summary(Format.bytes)) | \(zip(sync, whole).map { $0.bytesPerClientPerCommit / $1.bytesPerClientPerCommit }.summary { Format.decimal($0, 4) }) |

            Goal: sync ÷ whole at most 1.2: \(ratios.median <= 1.2 ? "pass" : "MISS") (worst run \(Format.decimal(ratios.max() ?? .nan, 3))).
            """)
    }
}
