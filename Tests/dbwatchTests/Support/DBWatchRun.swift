import DBWatchTestSupport
import Foundation

/// Runs of the built `dbwatch` binary, as ``ChildProcess``es: its standard
/// output and error are read as they come, so a test waits for the output
/// it expects (with a deadline) instead of sleeping.
///
/// ```swift
/// let run = try DBWatchRun.start(["watch", path, "SELECT 1", "--format", "ndjson"])
/// defer { run.kill() }
/// let snapshot = try await run.wait(forLines: 1)
/// ```
enum DBWatchRun {
    /// What a run printed so far, and its exit status once it exited.
    typealias Snapshot = ChildProcess.Snapshot
    /// Nothing satisfied a wait in time.
    typealias Timeout = ChildProcess.Timeout

    /// Starts `dbwatch` with `arguments`.
    ///
    /// - Parameters:
    ///   - arguments: the command line, without the program name.
    ///   - environment: added to (or replacing) this process's environment;
    ///     `NO_COLOR` and `COLUMNS` are unset unless given.
    ///   - directory: the working directory; the current one by default.
    ///   - fileSizeLimit: the largest file, in bytes, the run may write
    ///     (`RLIMIT_FSIZE`, set with util-linux's `prlimit`); none by default.
    static func start(
        _ arguments: [String], environment: [String: String] = [:], directory: String? = nil,
        fileSizeLimit: Int? = nil
    ) throws -> ChildProcess {
        var merged = ProcessInfo.processInfo.environment
        merged["NO_COLOR"] = nil
        merged["COLUMNS"] = nil
        for (key, value) in environment { merged[key] = value }
        // `env -C` changes the directory: posix_spawn_file_actions_addchdir_np is not visible from Swift.
        let command =
            (directory.map { ["/usr/bin/env", "-C", $0] } ?? [])
            + (fileSizeLimit.map { ["/usr/bin/prlimit", "--fsize=\($0)"] } ?? []) + [DBWatchBinary.path] + arguments
        return try ChildProcess.start(command, environment: merged)
    }

    /// Runs `dbwatch` to the end and returns what it printed and its exit status.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], directory: String? = nil,
        fileSizeLimit: Int? = nil, timeout: Double = 60
    ) async throws -> Snapshot {
        let run = try start(arguments, environment: environment, directory: directory, fileSizeLimit: fileSizeLimit)
        defer { run.kill() }
        return try await run.waitForExit(timeout: timeout)
    }
}
