import DBWatchTestSupport
import Foundation
import Testing

/// Standard output that cannot be written: `/dev/full` is reported (exit
/// 74), a reader that closed the pipe ends the command quietly by SIGPIPE.
@Suite("Standard output failures, end to end", RequiredProgram.sqlite3.trait)
struct OutputEndToEndTests {
    /// What a bash script printed and its status; `$0` in the script is the
    /// `dbwatch` binary. The script must bound its own run (`timeout`).
    struct ScriptResult {
        var stdout: String
        var stderr: String
        var status: Int32
    }

    /// Runs the script to the end; the script bounds its own run.
    func runScript(_ script: String, _ arguments: [String]) async throws -> ScriptResult {
        let result = try await ChildProcess.run(
            ["/bin/bash", "-c", script, DBWatchBinary.path] + arguments, timeout: 300)
        return ScriptResult(stdout: result.stdout, stderr: result.stderr, status: result.exitStatus ?? -1)
    }

    @Test func aFullOutputIsAWriteFailure() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("db.sqlite")
            try Shell.sqlite("CREATE TABLE t (a); INSERT INTO t VALUES (1);", on: path)
            let folder = scratch.file("migrations")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data("CREATE TABLE b (x);\n".utf8).write(to: URL(fileURLWithPath: folder + "/0001_b.sql"))
            for arguments in [
                ["watch", path, "SELECT * FROM t", "--once"], ["explain", path, "SELECT * FROM t"],
                ["migrate", path, "--dir", folder], ["--help"], ["watch", "--help"], ["--version"],
            ] {
                let result = try await runScript(#"timeout 60 "$0" "$@" >/dev/full"#, arguments)
                #expect(result.status == 74, "\(arguments): \(result)")
                #expect(result.stderr == "dbwatch: cannot write the output: No space left on device\n", "\(result)")
            }
        }
    }

    @Test func aClosedPipeEndsTheCommandQuietly() async throws {
        let script = #"timeout 60 "$0" "$@" | head -c 1 >/dev/null; echo "${PIPESTATUS[0]}""#
        let result = try await runScript(script, ["demo", "--seed", "1", "--rate", "50"])
        #expect(result.stdout == "\(128 + SIGPIPE)\n", "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
    }

    /// `watch` prints nothing while nothing changes: a reader that took the
    /// first value and closed the pipe (`| head -1`) still ends it at once,
    /// instead of at the next commit, which may never come.
    @Test func aClosedPipeEndsAnIdleWatch() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("db.sqlite")
            try Shell.sqlite("CREATE TABLE t (a); INSERT INTO t VALUES (1);", on: path)
            let script = #"timeout 30 "$0" "$@" | head -n 1; echo "${PIPESTATUS[0]}""#
            let result = try await runScript(script, ["watch", path, "SELECT a FROM t", "--format", "csv"])
            #expect(result.stdout == "a\r\n\(128 + SIGPIPE)\n", "\(result)")
            #expect(result.stderr.isEmpty, "\(result)")
        }
    }
}
