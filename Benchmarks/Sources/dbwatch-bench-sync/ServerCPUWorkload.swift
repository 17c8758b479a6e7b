import BenchProcess
import NIOCore

/// Workload 1: the server's CPU time per commit with `clients` clients of
/// one leaderboard of `rows` rows, as whole values (`GET
/// /leaderboard/events`) or over the sync protocol (`GET /sync`, then one
/// `subscribe` each). Each commit moves one player to the top and is
/// awaited until every client holds it. A new server process per
/// measurement, so that nothing of the other protocol runs meanwhile.
struct ServerCPUWorkload {
    enum Delivery: String {
        case wholeValues = "whole values"
        case sync = "sync protocol"
    }

    struct Measurement {
        /// Server CPU time (user + system) per commit, nanoseconds.
        var cpuPerCommit: Double
        /// Wall time per commit (commit, then every client holds it), nanoseconds.
        var wallPerCommit: Double
        /// `data:` bytes each client received per commit.
        var bytesPerClientPerCommit: Double
    }

    let server: String
    let clients: Int
    let rows: Int
    let commits: Int
    let warmUpCommits = 5
    let group: any EventLoopGroup

    func measure(_ delivery: Delivery) async throws -> Measurement {
        let process = try SyncServerProcess(
            executable: server, arguments: ["--players", "\(rows)", "--items", "1", "--sync-linger-seconds", "0"])
        defer { process.stop() }
        let recorder = StreamRecorder(clients: clients, marker: #""score":"#)
        let path = delivery == .sync ? "/sync" : "/leaderboard/events"
        let streams = try await openEventStreams(
            count: clients, path: { _ in path }, port: process.port, group: group, recorder: recorder)
        if delivery == .sync {
            let messages = (0..<clients).map { client in
                SubscribeMessage(session: recorder.session(of: client) ?? "", id: "board", query: "leaderboard")
            }
            try await postSubscriptions(messages, workers: 8, port: process.port, group: group)
            let expected = clients
            try await recorder.wait(for: "snapshots", timeout: .seconds(120)) { $0.snapshots >= expected }
        }
        let measurement = try await HTTPConnection.with(port: process.port, group: group) { control in
            var round = 0
            for _ in 0..<warmUpCommits {
                round += 1
                try await commitAndAwait(round, control: &control, recorder: recorder)
            }
            let cpuBefore = process.cpuNanoseconds
            let bytesBefore = recorder.counts.dataBytes
            let start = nowNanoseconds()
            for _ in 0..<commits {
                round += 1
                try await commitAndAwait(round, control: &control, recorder: recorder)
            }
            let wall = Double(nowNanoseconds() - start)
            let cpu = Double(process.cpuNanoseconds - cpuBefore)
            let bytes = Double(recorder.counts.dataBytes - bytesBefore)
            return Measurement(
                cpuPerCommit: cpu / Double(commits), wallPerCommit: wall / Double(commits),
                bytesPerClientPerCommit: bytes / Double(commits * clients))
        }
        await closeEventStreams(streams)
        return measurement
    }

    /// Commits `round` and waits until every client holds it.
    private func commitAndAwait(_ round: Int, control: inout HTTPConnection, recorder: StreamRecorder) async throws {
        recorder.arm(round: round)
        _ = try await control.commit("/leaderboard/commit/\(round)")
        let expected = clients
        try await recorder.wait(for: "round \(round) at every client", timeout: .seconds(60)) {
            $0.reached >= expected
        }
    }
}
