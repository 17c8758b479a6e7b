import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

/// The CLI's handling of another connection's lock: the notice,
/// Ctrl-C during the wait, and the exit codes of README's table ("Ctrl-C
/// during the wait stops it at once (exit 130)").
@Suite("dbwatch under another connection's lock")
struct LockWaitEndToEndTests {
    /// `demo --db` opens, migrates and seeds its file before the screen
    /// starts: under another connection's lock it said nothing, ignored
    /// Ctrl-C (InterruptSignal had already turned SIGINT off) and exited 75
    /// after two busy timeouts (10 s).
    @Test func demoSaysItWaitsAndCtrlCStopsTheWait() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("demo.sqlite")
            let snapshot = try await withDatabaseLocked(path, by: "BEGIN EXCLUSIVE") {
                let run = try DBWatchRun.start(["demo", "--db", path, "--seed", "1"])
                defer { run.kill() }
                // Sent as the notice is read: a loaded machine resuming this test late must not let the busy timeout end the wait first.
                try await run.interrupt(whenError: "waiting for another connection's lock", timeout: 20)
                return try await run.waitForExit(timeout: 20)
            }
            #expect(snapshot.exitStatus == 130, "\(snapshot)")
            #expect(snapshot.stderr.contains("interrupted"), "\(snapshot)")
            // The screen never started.
            #expect(!snapshot.stdout.contains("Demo stopped after"), "\(snapshot)")
        }
    }

    /// The path in "interrupted while opening" is shown sanitized, like
    /// everywhere else: a file name with an escape sequence must not reach
    /// the terminal raw.
    @Test func theInterruptedMessageSanitizesThePath() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("evil\u{1B}]0;pwned\u{07}.sqlite")
            let snapshot = try await withDatabaseLocked(path, by: "BEGIN EXCLUSIVE") {
                let run = try DBWatchRun.start(["watch", path, "SELECT count(*) FROM existing"])
                defer { run.kill() }
                // Sent as the notice is read: a loaded machine resuming this test late must not let the busy timeout end the wait first.
                try await run.interrupt(whenError: "waiting for another connection's lock", timeout: 20)
                return try await run.waitForExit(timeout: 20)
            }
            #expect(snapshot.exitStatus == 130, "\(snapshot)")
            #expect(snapshot.stderr.contains("interrupted while opening"), "\(snapshot)")
            #expect(!snapshot.stderr.contains("\u{1B}"), "\(snapshot)")
        }
    }
}
