import BenchProcess
import NIOCore

/// Workload 4 (a check, not a goal of the issue): batches under commits
/// that do not wait for the clients. `queries` subscriptions of one item
/// each on connections of `perConnection`; then commits at `rate` per
/// second for `seconds`, each changing one random item, paced by a clock
/// and awaited only for the server's answer. Counts the batches that
/// arrive while the commits go on, and how long after the last commit the
/// last round arrives.
struct StormWorkload {
    struct Measurement {
        var commits: Int
        /// Batches received while the commits went on, all connections together.
        var batchesDuring: Int
        /// The longest time without any batch at any connection, from the first commit to the last.
        var longestGap: Double
        /// Commits whose round reached a client before the last commit.
        var deliveredDuring: Int
        /// From the last commit until its round arrived, nanoseconds.
        var lastRoundDelay: Double
    }

    let server: String
    let shape: LatencyWorkload.QueryShape
    let queries: Int
    let perConnection: Int
    let rate: Double
    let seconds: Double
    let group: any EventLoopGroup

    func measure(seed: UInt64) async throws -> Measurement {
        let process = try SyncServerProcess(
            executable: server,
            arguments: [
                "--players", "1", "--items", "\(max(queries, 10_000))", "--max-observations", "\(queries + 100)",
                "--sync-linger-seconds", "0",
            ])
        defer { process.stop() }
        let connections = (queries + perConnection - 1) / perConnection
        let recorder = StreamRecorder(clients: connections, marker: #""round":"#, readsEveryRound: true)
        let streams = try await openEventStreams(
            count: connections, path: { _ in "/sync" }, port: process.port, group: group, recorder: recorder)
        let messages = (0..<queries).map { query in
            SubscribeMessage(
                session: recorder.session(of: query % connections) ?? "", id: "q\(query + 1)", query: shape.query,
                params: [shape.parameter: "\(query + 1)"])
        }
        try await postSubscriptions(messages, workers: 8, port: process.port, group: group)
        try await recorder.wait(for: "\(queries) snapshots", timeout: .seconds(300)) { $0.snapshots >= queries }
        let commits = Int(rate * seconds)
        var generator = SplitMix64(seed: seed)
        let (start, end) = try await HTTPConnection.with(port: process.port, group: group) { control in
            let clock = ContinuousClock()
            let first = clock.now
            let period = Duration.seconds(1 / rate)
            var start: UInt64 = 0
            var end: UInt64 = 0
            for round in 1...commits {
                try await clock.sleep(until: first + period * (round - 1))
                let item = Int(generator.next() % UInt64(queries)) + 1
                let committed = try await control.commit("/item/\(item)/commit/\(round)")
                if round == 1 { start = committed }
                end = committed
            }
            return (start, end)
        }
        try await recorder.wait(for: "the last round", timeout: .seconds(120)) { _ in
            recorder.receipt(of: commits) != nil
        }
        // Sorted: the two event loops' clients note their times before taking the recorder's lock.
        let during = recorder.batchTimes.filter { $0 >= start && $0 <= end }.sorted()
        var gaps: [UInt64] = []
        var previous = start
        for time in during {
            gaps.append(time - previous)
            previous = time
        }
        gaps.append(end - previous)
        let deliveredDuring = (1...commits).count { round in
            recorder.receipt(of: round).map { $0 <= end } ?? false
        }
        await closeEventStreams(streams)
        return Measurement(
            commits: commits, batchesDuring: during.count, longestGap: Double(gaps.max() ?? 0),
            deliveredDuring: deliveredDuring,
            lastRoundDelay: Double((recorder.receipt(of: commits) ?? end) - end))
    }
}
