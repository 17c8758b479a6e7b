import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A `dbwatch-bench-sync-server` process on 127.0.0.1 with an ephemeral
/// port, over a database file in its own temporary directory; ``stop()``
/// ends it by its PID and removes the directory.
final class SyncServerProcess {
    let port: Int
    private let process: Process
    private let directory: String

    /// Starts `executable` with `arguments` (and `--db`, `--port 0`); returns
    /// once it printed the port it listens on.
    init(executable: String, arguments: [String]) throws {
        directory = NSTemporaryDirectory() + "dbwatch-bench-sync-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments + ["--db", directory + "/bench.sqlite", "--port", "0"]
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw SyncBenchError(description: "cannot start \(executable): \(error)")
        }
        self.process = process
        var text = ""
        let reader = output.fileHandleForReading
        while !text.contains("\n") {
            let data = reader.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        guard let line = text.split(separator: "\n").first, line.hasPrefix("port="), let port = Int(line.dropFirst(5))
        else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: directory)
            throw SyncBenchError(description: "the server did not start: \(text)")
        }
        self.port = port
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

    /// User plus system CPU time of the process so far, in nanoseconds
    /// (`/proc/PID/stat`, in clock ticks of 10 ms).
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

    /// The 1-minute load average of the machine (`/proc/loadavg`).
    static var loadAverage: String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}
