import NIOCore

/// Workload 4's runs and table: both query shapes in every run.
struct StormReport {
    let options: SyncBenchOptions
    let group: any EventLoopGroup

    func run() async throws {
        var results: [LatencyWorkload.QueryShape: [StormWorkload.Measurement]] = [:]
        let shapes: [LatencyWorkload.QueryShape] = [.key, .slot]
        for run in 0..<options.runs {
            for shape in run % 2 == 0 ? shapes : shapes.reversed() {
                let workload = StormWorkload(
                    server: options.server, shape: shape, queries: options.stormQueries, perConnection: 100,
                    rate: options.stormRate, seconds: options.stormSeconds, group: group)
                let result = try await workload.measure(seed: UInt64(run))
                results[shape, default: []].append(result)
                print("  storm run \(run + 1), \(shape.query): \(result) load \(SyncServerProcess.loadAverage)")
            }
        }
        var table = """

            ### Batches under continuous commits: \(options.stormQueries) queries, 100 per connection, \(Format.decimal(options.stormRate, 0)) commits/s for \(Format.decimal(options.stormSeconds, 0)) s, \(options.runs) runs

            | query | commits | batches during the commits | commits delivered during them | longest time without a batch | last commit → its batch |
            |---|---|---|---|---|---|

            """
        for shape in shapes {
            let figures = results[shape, default: []]
            table += """
                | `\(shape.query)` | \(figures.first?.commits ?? 0) | \(figures.map { Double($0.batchesDuring) }.summary { Format.decimal($0, 0) }) | \(figures.map { Double($0.deliveredDuring) }.summary { Format.decimal($0, 0) }) | \(figures.map(\.longestGap).summary(Format.milliseconds)) | \(figures.map(\.lastRoundDelay).summary(Format.milliseconds)) |

                """
        }
        print(table)
    }
}
