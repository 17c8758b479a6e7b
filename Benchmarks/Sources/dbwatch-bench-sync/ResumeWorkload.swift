import BenchProcess
import NIOCore

/// Workload 3: a client away while `commits` commits happen, at `rate`
/// per second, then resuming from its position, against a client that
/// subscribes afresh at the same moment (a snapshot) and one that opens
/// the whole-value stream (the whole value). Each commit moves one player
/// of the `rows`-row leaderboard to the top.
struct ResumeWorkload {
    struct Measurement {
        /// `data:` bytes of the resumed client's first batch.
        var resumeBytes: Double
        /// What it was: `catchUp`, `changes` or `snapshot`, and how many steps.
        var resumeKind: String
        var resumeSteps: Int
        /// Whether its last step brings the last commit (`"score":LAST`).
        var resumeHoldsLastCommit: Bool
        /// `data:` bytes of a fresh subscription's first batch (a snapshot).
        var snapshotBytes: Double
        /// `data:` bytes of the whole value's first event.
        var wholeValueBytes: Double
        /// How long the commits took while the client was away, nanoseconds.
        var away: Double
    }

    let server: String
    let rows: Int
    let commits: Int
    let rate: Double
    let group: any EventLoopGroup

    func measure() async throws -> Measurement {
        // Linger past the absence: the shared subscription keeps observing, with its history.
        let linger = Int(Double(commits) / rate) + 120
        let process = try SyncServerProcess(
            executable: server,
            arguments: ["--players", "\(rows)", "--items", "1", "--sync-linger-seconds", "\(linger)"])
        defer { process.stop() }
        let port = process.port

        // The client that leaves: its snapshot's position is where it resumes from.
        let leaving = StreamRecorder(clients: 1, marker: #""score":"#, keepingEventsOf: [0])
        let leavingStream = try await openEventStreams(
            count: 1, path: { _ in "/sync" }, port: port, group: group, recorder: leaving)
        try await postSubscriptions(
            [SubscribeMessage(session: leaving.session(of: 0) ?? "", id: "board", query: "leaderboard")],
            workers: 1, port: port, group: group)
        try await leaving.wait(for: "the first snapshot", timeout: .seconds(60)) { $0.snapshots >= 1 }
        guard let snapshot = leaving.events(of: 0).last,
            let position = JSONScan.string(after: Self.positionField, in: snapshot[...])
        else { throw SyncBenchError(description: "no position in the first batch") }
        await closeEventStreams(leavingStream)

        let away = try await HTTPConnection.with(port: port, group: group) { control in
            try await waitUntilNoClient(&control)
            let clock = ContinuousClock()
            let start = clock.now
            let period = Duration.seconds(1 / rate)
            for round in 1...commits {
                try await clock.sleep(until: start + period * (round - 1))
                _ = try await control.commit("/leaderboard/commit/\(round)")
            }
            return (clock.now - start).nanoseconds
        }

        // Back: one client resumes, one subscribes afresh, one opens the whole-value stream.
        let back = StreamRecorder(clients: 3, marker: #""score":"#, keepingEventsOf: [0, 1, 2])
        var streams = try await openEventStreams(
            count: 2, path: { _ in "/sync" }, port: port, group: group, recorder: back)
        try await postSubscriptions(
            [
                SubscribeMessage(
                    session: back.session(of: 0) ?? "", id: "board", query: "leaderboard", position: position),
                SubscribeMessage(session: back.session(of: 1) ?? "", id: "board", query: "leaderboard"),
            ], workers: 2, port: port, group: group)
        let whole = StreamRecorder(clients: 1, marker: #""score":"#, keepingEventsOf: [0])
        streams += try await openEventStreams(
            count: 1, path: { _ in "/leaderboard/events" }, port: port, group: group, recorder: whole)
        try await back.wait(for: "the resumed and the fresh batches", timeout: .seconds(60)) { _ in
            back.events(of: 0).count >= 2 && back.events(of: 1).count >= 2
        }
        await closeEventStreams(streams)

        // Each client's events: `hello`, then the first batch.
        let resumed = back.events(of: 0)[1]
        let fresh = back.events(of: 1)[1]
        let kind = JSONScan.string(after: Array(#""kind":""#.utf8), in: resumed[...]) ?? "?"
        let steps = kind == "catchUp" ? JSONScan.count(of: Array(#"{"delete":"#.utf8), in: resumed[...]) : 1
        return Measurement(
            resumeBytes: Double(resumed.count), resumeKind: kind, resumeSteps: steps,
            resumeHoldsLastCommit: JSONScan.firstIndex(of: Array(#""score":\#(commits),"#.utf8), in: resumed[...])
                != nil
                || JSONScan.firstIndex(of: Array(#""score":\#(commits)}"#.utf8), in: resumed[...]) != nil,
            snapshotBytes: Double(fresh.count), wholeValueBytes: Double(whole.events(of: 0).first?.count ?? 0),
            away: away)
    }

    /// Waits until the server counts no client: the leaving one is away.
    private func waitUntilNoClient(_ control: inout HTTPConnection) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while try await control.statistics()["clients"] != 0 {
            if ContinuousClock.now > deadline {
                throw SyncBenchError(description: "the leaving client stays connected")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    private static let positionField = Array(#""position":""#.utf8)
}
