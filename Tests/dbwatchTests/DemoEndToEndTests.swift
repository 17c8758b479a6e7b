import DBWatchTestSupport
import Foundation
import Testing

/// `dbwatch demo`, into a pipe, with a second `dbwatch watch` on its file,
/// and on a real terminal (tmux).
@Suite("dbwatch demo, end to end")
struct DemoEndToEndTests {
    @Test func inMemoryDemoDrawsFramesAndStopsByItself() async throws {
        let snapshot = try await DBWatchRun.run(["demo", "--duration", "1.5", "--seed", "1", "--rate", "10"])
        #expect(snapshot.exitStatus == 0, "\(snapshot)")
        #expect(snapshot.stdout.contains("--- frame 1 "))
        #expect(snapshot.stdout.contains("DBWatch demo · live leaderboard"))
        #expect(snapshot.stdout.contains("in memory · seed 1"))
        #expect(snapshot.stdout.contains("Latest score changes"))
        #expect(snapshot.stdout.contains("Observations: leaderboard"))
        #expect(snapshot.lines.last?.hasPrefix("Demo stopped after ") == true, "\(snapshot)")
        #expect(!snapshot.stdout.contains("\u{1B}"), "no ANSI into a pipe")
        #expect(snapshot.stderr.isEmpty, "\(snapshot)")
    }

    @Test(.hangLimit(minutes: 1))
    func serveFlagServesTheLeaderboardWhileTheDemoRuns() async throws {
        let run = try DBWatchRun.start(["demo", "--seed", "3", "--rate", "20", "--serve", "0"])
        defer { run.kill() }
        let snapshot = try await run.wait(forOutput: "/?limit=10")
        let url = try #require(snapshot.stdout.firstMatch(of: /In a browser: (http:\/\/127\.0\.0\.1:\d+\/)\?limit=10/))
            .1
        let leaderboard = try jsonObject(try await fetch(url + "queries/leaderboard?limit=3").body)
        #expect(leaderboard["columns"] as? [String] == ["id", "name", "score", "team", "color"])
        #expect((leaderboard["rows"] as? [[Any]])?.count == 3)
        // The simulated writes change the team totals: a second value comes.
        let stream = try await EventStream.open(url + "queries/teams/events")
        let first = try await stream.nextEvent()
        let second = try await stream.nextEvent()
        #expect(try first.rows.count == 4)
        #expect(first.data != second.data)
        run.interrupt()
        // Values of writes made before the signal may come first.
        var end = try await stream.nextEvent()
        while end.event == nil { end = try await stream.nextEvent() }
        #expect(end.event == "end")
        #expect(end.data == #"{"reason":"shutdown"}"#)
        let exited = try await run.waitForExit(timeout: 20)
        #expect(exited.exitStatus == 0, "\(exited)")
        #expect(exited.stdout.contains("Demo stopped after"))
        #expect(exited.stderr.isEmpty, "\(exited)")
    }

    @Test func ctrlCStopsTheDemoWithZero() async throws {
        let run = try DBWatchRun.start(["demo", "--seed", "2"])
        defer { run.kill() }
        _ = try await run.wait(forOutput: "--- frame 1 ")
        run.interrupt()
        let snapshot = try await run.waitForExit(timeout: 20)
        #expect(snapshot.exitStatus == 0, "\(snapshot)")
        #expect(snapshot.stdout.contains("Demo stopped after"))
    }

    /// A hangup (the terminal closed) stops the demo like SIGTERM: the
    /// screen is restored and the summary printed, exit 0.
    @Test(arguments: [SIGTERM, SIGHUP])
    func terminationSignalsStopTheDemoWithZero(signal: Int32) async throws {
        let run = try DBWatchRun.start(["demo", "--seed", "2"])
        defer { run.kill() }
        _ = try await run.wait(forOutput: "--- frame 1 ")
        kill(run.pid, signal)
        let snapshot = try await run.waitForExit(timeout: 20)
        #expect(snapshot.exitStatus == 0, "\(snapshot)")
        #expect(snapshot.stdout.contains("Demo stopped after"), "\(snapshot)")
    }

    /// A write that fails for want of room (here the file size limit, as
    /// on a full disk) stops the demo with exit 74 instead of drawing
    /// failed writes until Ctrl-C and exiting 0.
    @Test(
        .disabled(
            if: isThreadSanitized,
            "the thread sanitizer's runtime crashes with SIGBUS in its own memory under a file size limit")
    )
    func aWriteFailureStopsTheDemo() async throws {
        try await withTemporaryDirectory { scratch in
            // Room for the schema, the seed and a few seconds of writes of
            // seed 1 in the WAL file (about 125 at 8 KB), not for 8 seconds
            // of them: 200 KB left a loaded CI machine no time to draw the
            // first frame before the limit.
            let snapshot = try await DBWatchRun.run(
                ["demo", "--db", scratch.file("demo.sqlite"), "--seed", "1", "--rate", "50", "--duration", "8"],
                fileSizeLimit: 1_000_000)
            #expect(snapshot.exitStatus == 74, "\(snapshot)")
            #expect(snapshot.stdout.contains("--- frame 1 "), "the demo ran before the failure: \(snapshot)")
            #expect(snapshot.stderr.hasPrefix("dbwatch: the demo stopped: cannot write the database: "), "\(snapshot)")
            #expect(!snapshot.stdout.contains("Demo stopped after"), "\(snapshot)")
        }
    }

    @Test func aSecondProcessWatchesTheDemoFile() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("demo.sqlite")
            // Long enough for both watches even on a slow (sanitized) build;
            // Ctrl-C ends it once they are done.
            let demo = try DBWatchRun.start(["demo", "--db", path, "--duration", "300", "--seed", "3", "--rate", "8"])
            defer { demo.kill() }
            _ = try await demo.wait(forOutput: "--- frame 1 ")
            #expect(demo.snapshot.stdout.contains("In another terminal: dbwatch watch \(path)"))
            let watch = try DBWatchRun.start([
                "watch", path, "SELECT count(*) FROM player", "--format", "ndjson", "--count", "2",
            ])
            defer { watch.kill() }
            let watched = try await watch.waitForExit(timeout: defaultTestTimeout)
            #expect(watched.exitStatus == 0, "\(watched)")
            let counts = watched.lines.compactMap { line -> Int? in
                let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                return (record?["rows"] as? [[Int]])?.first?.first
            }
            #expect(counts.count == 2, "\(watched)")
            #expect(Set(counts).count == 2, "the simulated writer changed the number of players")
            let scores = try await DBWatchRun.run([
                "watch", path, "SELECT sum(score) FROM player", "--format", "ndjson", "--count", "2",
            ])
            #expect(scores.exitStatus == 0, "\(scores)")
            demo.interrupt()
            let finished = try await demo.waitForExit(timeout: defaultTestTimeout)
            #expect(finished.exitStatus == 0, "\(finished)")
            #expect(finished.stdout.contains("Demo stopped after"))
        }
    }

    @Test(RequiredProgram.tmux.trait)
    func theLeaderboardLooksRightInARealTerminal() async throws {
        let tmux = try #require(Shell.tmux)
        let socket = "dbwatch-test-\(UUID().uuidString.prefix(8))"
        @discardableResult func tmuxRun(_ arguments: [String]) throws -> String {
            try Shell.run(tmux, ["-L", socket] + arguments)
        }
        defer { _ = try? tmuxRun(["kill-server"]) }
        let command = "env -u NO_COLOR '\(DBWatchBinary.path)' demo --seed 4; echo EXIT=$?; sleep 60"
        try tmuxRun(["new-session", "-d", "-s", "demo", "-x", "100", "-y", "30", command])

        let screen = try await capture(until: "Latest score changes", tmuxRun)
        let lines = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0].hasPrefix("DBWatch demo · live leaderboard"), "\(screen)")
        #expect(lines[0].hasSuffix("writes"), "the status sits against the right edge: \(screen)")
        #expect(lines[2].contains("#  Player") && lines[2].contains("Team") && lines[2].contains("Total"), "\(screen)")
        #expect(lines[3].hasPrefix("  1  "), "\(screen)")
        #expect(screen.contains("█"), "team bars: \(screen)")
        #expect(lines.allSatisfy { $0.count <= 100 })
        #expect(!screen.contains("\u{1B}") && !screen.contains("[0m"), "no escape sequence shows as text")
        let colored = try tmuxRun(["capture-pane", "-p", "-e", "-t", "demo"])
        #expect(colored.contains("\u{1B}["), "colours on a terminal")

        try tmuxRun(["send-keys", "-t", "demo", "C-c"])
        let after = try await capture(until: "EXIT=", tmuxRun)
        #expect(after.contains("Demo stopped after"), "\(after)")
        #expect(after.contains("EXIT=0"), "\(after)")
        #expect(after.contains("live leaderboard"), "the last frame stays on the normal screen: \(after)")
        let cursor = try tmuxRun(["display-message", "-p", "-t", "demo", "#{cursor_flag} #{alternate_on}"])
        #expect(cursor.trimmingCharacters(in: .whitespacesAndNewlines) == "1 0", "cursor shown, alternate screen left")
    }

    /// The pane's text once it contains `text`, polling tmux (a terminal
    /// has no other way to tell) until a deadline.
    private func capture(until text: String, _ tmux: ([String]) throws -> String) async throws -> String {
        let seconds = defaultTestTimeout
        let deadline = ContinuousClock.now + .seconds(seconds)
        var screen = ""
        while ContinuousClock.now < deadline {
            screen = try tmux(["capture-pane", "-p", "-t", "demo"])
            if screen.contains(text) { return screen }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw DBWatchRun.Timeout(
            what: "\(text) on the tmux screen", seconds: seconds, snapshot: .init(stdout: screen))
    }
}
