import BenchProcess
import NIOCore

/// Workload 2: write-to-client latency against the number of distinct live
/// queries. `queries` subscriptions of one item each (1…queries), spread
/// over connections of `perConnection` subscriptions each; then commits
/// each changing one random item, paced by a clock, each awaited until its
/// batch arrives. Latency: from the commit (the server's clock, in the
/// transaction) to the moment the batch's bytes reach the client.
struct LatencyWorkload {
    /// Which query each subscription is.
    enum QueryShape: String {
        /// `item`: `WHERE id = ?`, whose region is its one row.
        case key
        /// `itemBySlot`: `WHERE slot = ?`, whose region is the whole table.
        case slot

        var query: String { self == .key ? "item" : "itemBySlot" }
        var parameter: String { self == .key ? "id" : "slot" }
    }

    struct Measurement {
        var p50: Double
        var p99: Double
        var mean: Double
        /// Setup: subscribing every query, nanoseconds.
        var subscribeTime: Double
    }

    let server: String
    let shape: QueryShape
    let perConnection: Int
    let commits: Int
    let warmUpCommits = 20
    let interval: Duration
    let group: any EventLoopGroup

    func measure(queries: Int, seed: UInt64) async throws -> Measurement {
        let items = max(queries, 10_000)
        let process = try SyncServerProcess(
            executable: server,
            arguments: [
                "--players", "1", "--items", "\(items)", "--max-observations", "\(queries + 100)",
                "--sync-linger-seconds", "0",
            ])
        defer { process.stop() }
        let connections = (queries + perConnection - 1) / perConnection
        let recorder = StreamRecorder(clients: connections, marker: #""round":"#)
        let streams = try await openEventStreams(
            count: connections, path: { _ in "/sync" }, port: process.port, group: group, recorder: recorder)
        let subscribeStart = nowNanoseconds()
        let messages = (0..<queries).map { query in
            SubscribeMessage(
                session: recorder.session(of: query % connections) ?? "", id: "q\(query + 1)", query: shape.query,
                params: [shape.parameter: "\(query + 1)"])
        }
        try await postSubscriptions(messages, workers: 8, port: process.port, group: group)
        try await recorder.wait(for: "\(queries) snapshots", timeout: .seconds(300)) { $0.snapshots >= queries }
        let subscribeTime = Double(nowNanoseconds() - subscribeStart)
        var generator = SplitMix64(seed: seed)
        let latencies = try await HTTPConnection.with(port: process.port, group: group) { control in
            var latencies: [Double] = []
            let clock = ContinuousClock()
            var next = clock.now
            for index in 0..<(warmUpCommits + commits) {
                let round = index + 1
                let item = Int(generator.next() % UInt64(queries)) + 1
                let committed = try await control.commit("/item/\(item)/commit/\(round)")
                try await recorder.wait(for: "round \(round) (item \(item))", timeout: .seconds(30)) { _ in
                    recorder.receipt(of: round) != nil
                }
                if index >= warmUpCommits, let received = recorder.receipt(of: round) {
                    latencies.append(Double(Int64(bitPattern: received &- committed)))
                }
                next = next + interval
                try await clock.sleep(until: next)
            }
            return latencies
        }
        await closeEventStreams(streams)
        return Measurement(
            p50: latencies.quantile(0.5), p99: latencies.quantile(0.99),
            mean: latencies.reduce(0, +) / Double(max(latencies.count, 1)), subscribeTime: subscribeTime)
    }
}

/// A small deterministic random generator (SplitMix64), so that every
/// number of queries sees the same kind of sequence.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
