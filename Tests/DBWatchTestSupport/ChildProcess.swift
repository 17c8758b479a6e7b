import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A program the tests run (`sqlite3`, `dbwatch`, `tmux`, `chromium`): the
/// one way tests start a process. Its standard output and error are read
/// as they come, so a test waits for the output it expects (with a
/// deadline) instead of sleeping; it gets signals by pid.
///
/// ```swift
/// let shell = try ChildProcess.start(["/usr/bin/sqlite3", path], input: .pipe)
/// defer { shell.kill() }
/// try shell.write("SELECT 1;\n")
/// _ = try await shell.wait(forOutput: "1\n")
/// ```
///
/// The child is started with `posix_spawn` (see ``Spawner``) and reaped by
/// a thread blocked in `waitpid`: `Process` was seen to miss the exit of a
/// child when several ended together.
public final class ChildProcess: Sendable {
    /// Where the child's standard input comes from.
    public enum Input: Sendable {
        /// `/dev/null`.
        case none
        /// A file, as `program < path`.
        case file(String)
        /// A pipe fed by ``write(_:)`` and closed by ``closeInput()``.
        case pipe
    }

    /// What the process printed so far, and its exit status once it exited.
    public struct Snapshot: Sendable, CustomStringConvertible {
        /// Standard output so far.
        public var stdout = ""
        /// Standard error so far.
        public var stderr = ""
        /// The exit code, or 128 + the signal that ended it; `nil` while it runs.
        public var exitStatus: Int32?
        /// Whether the process exited and its output was read to the end.
        public var isFinished = false

        /// A snapshot of what a process printed (for a failure's description).
        public init(stdout: String = "", stderr: String = "", exitStatus: Int32? = nil, isFinished: Bool = false) {
            (self.stdout, self.stderr, self.exitStatus, self.isFinished) = (stdout, stderr, exitStatus, isFinished)
        }

        /// The non-empty lines of standard output.
        public var lines: [String] { stdout.split(separator: "\n").map(String.init) }

        public var description: String {
            "exit: \(exitStatus.map(String.init) ?? "running")\n--- stdout:\n\(stdout)\n--- stderr:\n\(stderr)"
        }
    }

    /// A process that could not be started or fed.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String

        /// A failure described by `description`.
        public init(_ description: String) { self.description = description }
    }

    /// Nothing satisfied a wait in time.
    public struct Timeout: Error, CustomStringConvertible {
        /// What was waited for.
        public let what: String
        /// How long.
        public let seconds: Double
        /// What the process had printed by then.
        public let snapshot: Snapshot

        /// A wait for `what` that ended after `seconds` with `snapshot`.
        public init(what: String, seconds: Double, snapshot: Snapshot) {
            (self.what, self.seconds, self.snapshot) = (what, seconds, snapshot)
        }

        public var description: String { "timed out after \(seconds) s waiting for \(what)\n\(snapshot)" }
    }

    private struct Waiter {
        let id: Int
        let condition: @Sendable (Snapshot) -> Bool
        let continuation: CheckedContinuation<Snapshot, any Error>
        /// Run on the thread that read the output, the moment the condition holds.
        var onMatch: (@Sendable () -> Void)?
    }

    private struct State {
        var stdout = Data()
        var stderr = Data()
        var exitStatus: Int32?
        var openStreams = 2
        var waiters: [Waiter] = []
        var nextWaiterID = 0

        var isFinished: Bool { exitStatus != nil && openStreams == 0 }

        var snapshot: Snapshot {
            Snapshot(
                stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self),
                exitStatus: exitStatus, isFinished: isFinished)
        }
    }

    /// The process id.
    public let pid: pid_t
    /// The write end of the standard input pipe (with ``Input/pipe``).
    private let input: FileHandle?
    private let state = Protected(State())
    /// Signalled once when the process has exited and its output was read.
    private let finished = DispatchSemaphore(value: 0)
    /// Signalled once when the process has exited.
    private let exited = DispatchSemaphore(value: 0)

    private init(pid: pid_t, input: FileHandle?) {
        self.pid = pid
        self.input = input
    }

    /// Starts `command` (`command[0]` is the program's path).
    ///
    /// - Parameters:
    ///   - environment: the child's whole environment; this process's by default.
    ///   - input: its standard input; `/dev/null` by default.
    public static func start(
        _ command: [String], environment: [String: String] = ProcessInfo.processInfo.environment, input: Input = .none
    ) throws -> ChildProcess {
        let spawned = try Spawner.spawn(command, environment: environment, input: input)
        let child = ChildProcess(
            pid: spawned.pid, input: spawned.input.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) })
        child.read(spawned.output, into: \.stdout)
        child.read(spawned.error, into: \.stderr)
        let reaper = Thread { [child] in
            let code = Spawner.waitForExit(of: spawned.pid)
            child.update { $0.exitStatus = code }
            child.exited.signal()
        }
        reaper.start()
        return child
    }

    /// Runs `command` to the end and returns what it printed and its exit
    /// status; kills it and throws ``Timeout`` after `timeout` seconds.
    public static func run(
        _ command: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        input: Input = .none, timeout: Double = defaultTestTimeout
    ) async throws -> Snapshot {
        let child = try start(command, environment: environment, input: input)
        defer { child.kill() }
        return try await child.waitForExit(timeout: timeout)
    }

    /// Runs `command` to the end, blocking the calling thread, and returns
    /// what it printed and its exit status: for synchronous set-up code.
    public static func runBlocking(
        _ command: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        input: Input = .none
    ) throws -> Snapshot {
        let child = try start(command, environment: environment, input: input)
        child.finished.wait()
        child.finished.signal()
        return child.snapshot
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
        let (ready, isFinished) = state.withLock {
            state -> ([(CheckedContinuation<Snapshot, any Error>, Snapshot)], Bool) in
            let wasFinished = state.isFinished
            change(&state)
            let isFinished = !wasFinished && state.isFinished
            // Decoding the output costs as much as the output is long: only
            // for a waiter (a browser's chatter has none).
            guard !state.waiters.isEmpty else { return ([], isFinished) }
            let snapshot = state.snapshot
            var ready: [(CheckedContinuation<Snapshot, any Error>, Snapshot)] = []
            state.waiters.removeAll { waiter in
                guard waiter.condition(snapshot) else { return false }
                waiter.onMatch?()
                ready.append((waiter.continuation, snapshot))
                return true
            }
            return (ready, isFinished)
        }
        if isFinished { finished.signal() }
        for (continuation, snapshot) in ready { continuation.resume(returning: snapshot) }
    }

    /// What was printed so far.
    public var snapshot: Snapshot { state.withLock { $0.snapshot } }

    /// Whether the process has not exited yet.
    public var isRunning: Bool { snapshot.exitStatus == nil }

    /// Writes `text` to the standard input pipe (``Input/pipe``).
    public func write(_ text: String) throws {
        guard let input else { throw Failure("\(pid) was started without a standard input pipe") }
        try input.write(contentsOf: Data(text.utf8))
    }

    /// Closes the standard input pipe: the child reads its end.
    public func closeInput() {
        try? input?.close()
    }

    /// Waits until `condition` holds for what was printed, or fails after
    /// `timeout` seconds with everything printed so far.
    public func wait(
        for what: String, timeout: Double = defaultTestTimeout,
        onMatch: (@Sendable () -> Void)? = nil, until condition: @escaping @Sendable (Snapshot) -> Bool
    ) async throws -> Snapshot {
        try await withCheckedThrowingContinuation { continuation in
            let immediate = state.withLock { state -> Snapshot? in
                let snapshot = state.snapshot
                if condition(snapshot) {
                    onMatch?()
                    return snapshot
                }
                let id = state.nextWaiterID
                state.nextWaiterID += 1
                state.waiters.append(
                    Waiter(id: id, condition: condition, continuation: continuation, onMatch: onMatch))
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
    public func wait(forOutput text: String, timeout: Double = defaultTestTimeout) async throws -> Snapshot {
        try await wait(for: "output containing \(text)", timeout: timeout) { $0.stdout.contains(text) }
    }

    /// Waits until standard error contains `text`.
    public func wait(forError text: String, timeout: Double = defaultTestTimeout) async throws -> Snapshot {
        try await wait(for: "standard error containing \(text)", timeout: timeout) { $0.stderr.contains(text) }
    }

    /// Sends Ctrl-C (`SIGINT`) the moment standard error contains `text`,
    /// from the thread that read it, and returns then. A test that must
    /// interrupt a wait within the child's own timeout (a busy timeout of a
    /// few seconds) does not depend on how soon a loaded machine resumes it.
    @discardableResult
    public func interrupt(whenError text: String, timeout: Double = defaultTestTimeout) async throws -> Snapshot {
        let pid = pid
        return try await wait(
            for: "standard error containing \(text)", timeout: timeout, onMatch: { Glibc.kill(pid, SIGINT) }
        ) { $0.stderr.contains(text) }
    }

    /// Waits until standard output holds `count` complete lines.
    public func wait(forLines count: Int, timeout: Double = defaultTestTimeout) async throws -> Snapshot {
        try await wait(for: "\(count) lines", timeout: timeout) { snapshot in
            snapshot.stdout.filter { $0 == "\n" }.count >= count
        }
    }

    /// Waits until the process exited and its output was read to the end.
    public func waitForExit(timeout: Double = defaultTestTimeout) async throws -> Snapshot {
        try await wait(for: "the process to exit", timeout: timeout) { $0.isFinished }
    }

    /// Blocks the calling thread until the process exited (its output may
    /// still be read by others holding the pipes: a browser's helpers), at
    /// most `seconds`; returns whether it exited.
    @discardableResult
    public func blockingWaitForExit(seconds: Double) -> Bool {
        guard exited.wait(timeout: .now() + seconds) == .success else { return false }
        exited.signal()
        return true
    }

    /// Sends Ctrl-C (`SIGINT`).
    public func interrupt() {
        send(SIGINT)
    }

    /// Sends `signal` (`SIGTERM`, `SIGHUP`…) if the process still runs.
    public func send(_ signal: Int32) {
        if isRunning { Glibc.kill(pid, signal) }
    }

    /// Ends the process with `SIGKILL` if it still runs.
    public func kill() {
        send(SIGKILL)
    }

    /// Whether the process runs a thread named `name` (DBWatch names its
    /// connection threads: `dbwatch.read.0`).
    public func hasThread(named name: String) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { task in
            let comm = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)
            return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }

    /// The processor time the process used so far, user and system, in
    /// seconds (0 once it is gone): a sign that it is inside a costly call.
    public var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        // After the command name: state is field 3, utime and stime fields 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// Runs `body`, which blocks, on a thread of its own, and waits for it
/// without blocking a thread of the cooperative pool. That pool has one
/// thread per core for all the tests running in parallel: on two cores, two
/// tests waiting there for slow programs stalled every other test, some of
/// them past their timeouts.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
