import DBWatchTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One run of the built `dbwatch` binary. Its standard output and error are
/// read as they come, so a test waits for the output it expects (with a
/// deadline) instead of sleeping.
///
/// ```swift
/// let run = try DBWatchRun.start(["watch", path, "SELECT 1", "--format", "ndjson"])
/// defer { run.kill() }
/// let snapshot = try await run.wait(forLines: 1)
/// ```
final class DBWatchRun: Sendable {
    /// What the run printed so far, and its exit status once it exited.
    struct Snapshot: Sendable, CustomStringConvertible {
        var stdout = ""
        var stderr = ""
        var exitStatus: Int32?
        var isFinished = false

        /// The non-empty lines of standard output.
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }

        var description: String {
            "exit: \(exitStatus.map(String.init) ?? "running")\n--- stdout:\n\(stdout)\n--- stderr:\n\(stderr)"
        }
    }

    /// Nothing satisfied the wait in time.
    struct Timeout: Error, CustomStringConvertible {
        let what: String
        let seconds: Double
        let snapshot: Snapshot
        var description: String { "timed out after \(seconds) s waiting for \(what)\n\(snapshot)" }
    }

    private struct Waiter {
        let id: Int
        let condition: @Sendable (Snapshot) -> Bool
        let continuation: CheckedContinuation<Snapshot, any Error>
    }

    private struct State {
        var stdout = Data()
        var stderr = Data()
        var exitStatus: Int32?
        var openStreams = 2
        var waiters: [Waiter] = []
        var nextWaiterID = 0

        var snapshot: Snapshot {
            Snapshot(
                stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self),
                exitStatus: exitStatus, isFinished: exitStatus != nil && openStreams == 0)
        }
    }

    /// The process id.
    let pid: pid_t
    private let state = Protected(State())

    private init(pid: pid_t) {
        self.pid = pid
    }

    /// Starts `dbwatch` with `arguments`.
    ///
    /// The child is started with `posix_spawn` and reaped by a thread blocked
    /// in `waitpid`: `Process` was seen to miss the exit of a child when
    /// several ended together.
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
    ) throws -> DBWatchRun {
        var merged = ProcessInfo.processInfo.environment
        merged["NO_COLOR"] = nil
        merged["COLUMNS"] = nil
        for (key, value) in environment { merged[key] = value }
        // `env -C` changes the directory: posix_spawn_file_actions_addchdir_np is not visible from Swift.
        let command =
            (directory.map { ["/usr/bin/env", "-C", $0] } ?? [])
            + (fileSizeLimit.map { ["/usr/bin/prlimit", "--fsize=\($0)"] } ?? []) + [DBWatchBinary.path] + arguments
        let (pid, output, error) = try Spawner.spawn(command, environment: merged)
        let run = DBWatchRun(pid: pid)
        run.read(output, into: \.stdout)
        run.read(error, into: \.stderr)
        let reaper = Thread { [run] in
            let code = Spawner.waitForExit(of: pid)
            run.update { $0.exitStatus = code }
        }
        reaper.start()
        return run
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

    private func read(_ descriptor: Int32, into stream: WritableKeyPath<State, Data> & Sendable) {
        let thread = Thread { [self] in
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                update { $0[keyPath: stream].append(data) }
            }
            update { $0.openStreams -= 1 }
        }
        thread.start()
    }

    private func update(_ change: (inout State) -> Void) {
        let ready = state.withLock { state -> [(CheckedContinuation<Snapshot, any Error>, Snapshot)] in
            change(&state)
            let snapshot = state.snapshot
            var ready: [(CheckedContinuation<Snapshot, any Error>, Snapshot)] = []
            state.waiters.removeAll { waiter in
                guard waiter.condition(snapshot) else { return false }
                ready.append((waiter.continuation, snapshot))
                return true
            }
            return ready
        }
        for (continuation, snapshot) in ready { continuation.resume(returning: snapshot) }
    }

    /// What was printed so far.
    var snapshot: Snapshot { state.withLock { $0.snapshot } }

    /// Waits until `condition` holds for what was printed, or fails after
    /// `timeout` seconds with everything printed so far.
    func wait(
        for what: String, timeout: Double = 60, until condition: @escaping @Sendable (Snapshot) -> Bool
    ) async throws -> Snapshot {
        try await withCheckedThrowingContinuation { continuation in
            let immediate = state.withLock { state -> Snapshot? in
                let snapshot = state.snapshot
                if condition(snapshot) { return snapshot }
                let id = state.nextWaiterID
                state.nextWaiterID += 1
                state.waiters.append(Waiter(id: id, condition: condition, continuation: continuation))
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
                    expire(waiter: id, what: what, timeout: timeout)
                }
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    /// Fails the waiter `id` if it still waits.
    private func expire(waiter id: Int, what: String, timeout: Double) {
        let expired = state.withLock { state -> (Waiter, Snapshot)? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return (state.waiters.remove(at: index), state.snapshot)
        }
        if let (waiter, snapshot) = expired {
            waiter.continuation.resume(throwing: Timeout(what: what, seconds: timeout, snapshot: snapshot))
        }
    }

    /// Waits until standard output holds `text`.
    func wait(forOutput text: String, timeout: Double = 60) async throws -> Snapshot {
        try await wait(for: "output containing \(text)", timeout: timeout) { $0.stdout.contains(text) }
    }

    /// Waits until standard error contains `text`.
    func wait(forError text: String, timeout: Double = 60) async throws -> Snapshot {
        try await wait(for: "standard error containing \(text)", timeout: timeout) { $0.stderr.contains(text) }
    }

    /// Waits until standard output holds `count` complete lines.
    func wait(forLines count: Int, timeout: Double = 60) async throws -> Snapshot {
        try await wait(for: "\(count) lines", timeout: timeout) { snapshot in
            snapshot.stdout.filter { $0 == "\n" }.count >= count
        }
    }

    /// Waits until the process exited and its output was read to the end.
    func waitForExit(timeout: Double = 60) async throws -> Snapshot {
        try await wait(for: "the process to exit", timeout: timeout) { $0.isFinished }
    }

    /// Sends Ctrl-C (`SIGINT`).
    func interrupt() {
        if snapshot.exitStatus == nil { Glibc.kill(pid, SIGINT) }
    }

    /// Sends `signal` (`SIGTERM`, `SIGHUP`…) if the process still runs.
    func send(_ signal: Int32) {
        if snapshot.exitStatus == nil { Glibc.kill(pid, signal) }
    }

    /// Whether the process runs a thread named `name` (DBWatch names its
    /// connection threads: `dbwatch.read.0`).
    func hasThread(named name: String) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { task in
            let comm = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)
            return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }

    /// The processor time the process used so far, user and system, in
    /// seconds (0 once it is gone): a sign that it is inside a costly call.
    var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        // After the command name: state is field 3, utime and stime fields 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Ends the process with `SIGKILL` if it still runs.
    func kill() {
        if snapshot.exitStatus == nil { Glibc.kill(pid, SIGKILL) }
    }
}
