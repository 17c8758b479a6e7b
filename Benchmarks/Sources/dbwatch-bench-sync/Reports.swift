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

/// Workload 2's runs and table: each number of queries in every run
/// (rotated order), latencies against those of one query in the same run.
struct LatencyReport {
    let options: SyncBenchOptions
    let group: any EventLoopGroup

    func run() async throws {
        let workload = LatencyWorkload(
            server: options.server, perConnection: options.perConnection, commits: options.latencyCommits,
            interval: .milliseconds(options.latencyIntervalMilliseconds), group: group)
        let counts = options.queries
        var p50: [Int: [Double]] = [:]
        var p99: [Int: [Double]] = [:]
        var p50Ratios: [Int: [Double]] = [:]
        var p99Ratios: [Int: [Double]] = [:]
        var subscribeTimes: [Int: [Double]] = [:]
        for run in 0..<options.runs {
            var results: [Int: LatencyWorkload.Measurement] = [:]
            for step in 0..<counts.count {
                let queries = counts[(step + run) % counts.count]
                let result = try await workload.measure(queries: queries, seed: UInt64(run * 1_000 + queries))
                results[queries] = result
                print("  latency run \(run + 1), \(queries) queries: \(result) load \(SyncServerProcess.loadAverage)")
            }
            let base = counts[0]
            for queries in counts {
                guard let result = results[queries], let first = results[base] else { continue }
                p50[queries, default: []].append(result.p50)
                p99[queries, default: []].append(result.p99)
                p50Ratios[queries, default: []].append(result.p50 / first.p50)
                p99Ratios[queries, default: []].append(result.p99 / first.p99)
                subscribeTimes[queries, default: []].append(result.subscribeTime)
            }
        }
        var table = """

            ### Commit to client against distinct live queries: \(options.latencyCommits) commits each, \(options.perConnection) subscriptions per connection, \(options.runs) runs

            | live queries | p50 | p99 | p50 ÷ \(counts[0]) query | p99 ÷ \(counts[0]) query | subscribing them all |
            |---|---|---|---|---|---|

            """
        for queries in counts {
            table += """
                | \(queries) | \(p50[queries, default: []].summary(Format.microseconds)) | \(p99[queries, default: []].summary(Format.microseconds)) | \(p50Ratios[queries, default: []].summary(Format.percent)) | \(p99Ratios[queries, default: []].summary(Format.percent)) | \(subscribeTimes[queries, default: []].summary(Format.milliseconds)) |

                """
        }
        let worst = counts.map { p50Ratios[$0, default: []].median }.max() ?? .nan
        table +=
            "\nGoal: p50 within 20 % of one query's: \(worst <= 1.2 ? "pass" : "MISS") (largest median ratio \(Format.percent(worst)))."
        print(table)
    }
}

/// Workload 3's runs and table.
struct ResumeReport {
    let options: SyncBenchOptions
    let group: any EventLoopGroup

    func run() async throws {
        let workload = ResumeWorkload(
            server: options.server, rows: options.resumeRows, commits: options.resumeCommits,
            rate: options.resumeRate, group: group)
        var results: [ResumeWorkload.Measurement] = []
        for run in 0..<options.runs {
            let result = try await workload.measure()
            results.append(result)
            print("  resume run \(run + 1): \(result) load \(SyncServerProcess.loadAverage)")
        }
        print(
            """

            ### Resume after \(options.resumeCommits) commits at \(Format.decimal(options.resumeRate, 0))/s, \(options.resumeRows)-row leaderboard, \(options.runs) runs

            | | bytes | ÷ fresh snapshot |
            |---|---|---|
            | resumed: first batch (\(Set(results.map(\.resumeKind)).sorted().joined(separator: ", ")), \(results.map { Double($0.resumeSteps) }.summary { Format.decimal($0, 0) }) steps; last commit held: \(results.allSatisfy(\.resumeHoldsLastCommit) ? "yes" : "NO")) | \(results.map(\.resumeBytes).summary(Format.bytes)) | **\(results.map { $0.resumeBytes / $0.snapshotBytes }.summary(Format.percent))** |
            | fresh subscription: snapshot | \(results.map(\.snapshotBytes).summary(Format.bytes)) | 100 % |
            | whole-value stream: first value | \(results.map(\.wholeValueBytes).summary(Format.bytes)) | \(results.map { $0.wholeValueBytes / $0.snapshotBytes }.summary(Format.percent)) |
            | time away (the commits) | \(results.map(\.away).summary { Format.decimal($0 / 1e9, 1) + " s" }) | |

            Goal: the changes only (a catch-up, not a snapshot): \(results.allSatisfy { $0.resumeKind == "catchUp" && $0.resumeHoldsLastCommit } ? "pass" : "MISS").
            """)
    }
}
