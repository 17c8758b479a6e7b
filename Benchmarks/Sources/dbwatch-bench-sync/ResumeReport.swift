import NIOCore

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
