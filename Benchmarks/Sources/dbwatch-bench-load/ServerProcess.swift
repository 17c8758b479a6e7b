import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A server process on 127.0.0.1 with an ephemeral port, over a database
/// file in its own temporary directory: `dbwatch-bench-server`, or `dbwatch
/// serve` (issue 17); `stop()` ends it by its PID.
final class ServerProcess {
    let port: Int
    private let process: Process
    private let directory: String

    /// A `dbwatch-bench-server` in `mode` over a fresh database of its own.
    convenience init(executable: String, mode: String, rows: Int) throws {
        let directory = try Self.temporaryDirectory()
        try self.init(
            executable: executable,
            arguments: ["--mode", mode, "--db", directory + "/bench.sqlite", "--rows", "\(rows)", "--port", "0"],
            directory: directory, name: mode
        ) { line in
            // It prints `port=P` once it accepts connections.
            line.hasPrefix("port=") ? Int(line.dropFirst(5)) : nil
        }
    }

    /// Starts `executable` with `arguments`, reads standard output up to its
    /// first line and finds the port in it with `port`. `directory` (see
    /// ``temporaryDirectory()``) is removed by ``stop()``.
    init(
        executable: String, arguments: [String], directory: String, name: String,
        port: (Substring) -> Int?
    ) throws {
        self.directory = directory
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw LoadError(description: "cannot start \(executable): \(error)")
        }
        self.process = process
        var text = ""
        let reader = output.fileHandleForReading
        while !text.contains("\n") {
            let data = reader.availableData
            if data.isEmpty {
                process.waitUntilExit()
                try? FileManager.default.removeItem(atPath: directory)
                throw LoadError(description: "the server (\(name)) exited before listening")
            }
            text += String(decoding: data, as: UTF8.self)
        }
        guard let line = text.split(separator: "\n").first, let port = port(line) else {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: directory)
            throw LoadError(description: "unexpected server output: \(text)")
        }
        self.port = port
    }

    /// A new empty directory for a server's database.
    static func temporaryDirectory() throws -> String {
        let directory =
            NSTemporaryDirectory() + "dbwatch-bench-server-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    var pid: Int32 { process.processIdentifier }

    /// SIGTERM (graceful shutdown), then SIGKILL after 5 s; removes the database.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The CPU time of the process's threads alive now, in nanoseconds
    /// (`/proc/PID/task/*/schedstat`: exact, but a thread that ended
    /// takes its time with it), for intervals of milliseconds.
    var threadCPUNanoseconds: UInt64 {
        let tasks = "/proc/\(pid)/task"
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []
        return threads.reduce(0) { sum, thread in
            guard let stat = try? String(contentsOfFile: "\(tasks)/\(thread)/schedstat", encoding: .utf8),
                let first = stat.split(separator: " ").first, let nanoseconds = UInt64(first)
            else { return sum }
            return sum + nanoseconds
        }
    }

    /// User plus system CPU time of the process so far, in nanoseconds
    /// (`/proc/PID/stat`, in clock ticks: 10 ms here); 0 when unreadable.
    var cpuNanoseconds: UInt64 {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        // After `pid (comm)`: state is field 3, utime and stime fields 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return 0 }
        let ticks = UInt64(max(sysconf(Int32(_SC_CLK_TCK)), 1))
        return (user + system) * 1_000_000_000 / ticks
    }
}
