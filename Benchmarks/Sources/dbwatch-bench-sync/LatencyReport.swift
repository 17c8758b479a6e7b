import NIOCore

/// Workload 2's runs and tables: for each number of subscriptions per
/// connection, each number of queries in every run (rotated order),
/// latencies against those of the first number of queries in the same run.
struct LatencyReport {
    let options: SyncBenchOptions
    let group: any EventLoopGroup

    /// One configuration: subscriptions per connection and live queries.
    private struct Case: Hashable {
        var perConnection: Int
        var queries: Int
    }

    /// The figures of one case over the runs.
    private struct Series {
        var p50: [Double] = []
        var p99: [Double] = []
        var p50Ratios: [Double] = []
        var p99Ratios: [Double] = []
        var subscribeTimes: [Double] = []

        mutating func append(_ result: LatencyWorkload.Measurement, against first: LatencyWorkload.Measurement) {
            p50.append(result.p50)
            p99.append(result.p99)
            p50Ratios.append(result.p50 / first.p50)
            p99Ratios.append(result.p99 / first.p99)
            subscribeTimes.append(result.subscribeTime)
        }
    }

    func run() async throws {
        let counts = options.queries
        var series: [Case: Series] = [:]
        for run in 0..<options.runs {
            for perConnection in options.perConnection {
                let workload = LatencyWorkload(
                    server: options.server, shape: options.queryShape, perConnection: perConnection,
                    commits: options.latencyCommits, interval: .milliseconds(options.latencyIntervalMilliseconds),
                    group: group)
                var results: [Int: LatencyWorkload.Measurement] = [:]
                for step in 0..<counts.count {
                    let queries = counts[(step + run) % counts.count]
                    let result = try await workload.measure(queries: queries, seed: UInt64(run * 100_000 + queries))
                    results[queries] = result
                    print(
                        "  latency run \(run + 1), \(perConnection) per connection, \(queries) queries: \(result) load \(SyncServerProcess.loadAverage)"
                    )
                }
                guard let first = results[counts[0]] else { continue }
                for queries in counts {
                    guard let result = results[queries] else { continue }
                    series[Case(perConnection: perConnection, queries: queries), default: Series()].append(
                        result, against: first)
                }
            }
        }
        for perConnection in options.perConnection {
            var table = """

                ### Commit to client against distinct live queries (`\(options.queryShape.query)`): \(options.latencyCommits) commits each, \(perConnection) subscriptions per connection, \(options.runs) runs

                | live queries | p50 | p99 | p50 ÷ \(counts[0]) | p99 ÷ \(counts[0]) | subscribing them all |
                |---|---|---|---|---|---|

                """
            var worst = 0.0
            for queries in counts {
                let figures = series[Case(perConnection: perConnection, queries: queries), default: Series()]
                worst = max(worst, figures.p50Ratios.median)
                table += """
                    | \(queries) | \(figures.p50.summary(Format.microseconds)) | \(figures.p99.summary(Format.microseconds)) | \(figures.p50Ratios.summary(Format.percent)) | \(figures.p99Ratios.summary(Format.percent)) | \(figures.subscribeTimes.summary(Format.milliseconds)) |

                    """
            }
            table +=
                "\nGoal: p50 within 20 % of \(counts[0]) query's: \(worst <= 1.2 ? "pass" : "MISS") (largest median ratio \(Format.percent(worst)))."
            print(table)
        }
    }
}
