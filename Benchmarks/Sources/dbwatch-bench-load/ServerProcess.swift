import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A `dbwatch-bench-server` process on 127.0.0.1 with an ephemeral port,
/// over a fresh database file; `stop()` ends it by its PID.
final class ServerProcess {
    let port: Int
    private let process: Process
    private let directory: String

    init(executable: String, mode: String, rows: Int) throws {
        directory = NSTemporaryDirectory() + "dbwatch-bench-server-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--mode", mode, "--db", directory + "/bench.sqlite", "--rows", "\(rows)", "--port", "0"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        self.process = process
        // The server prints `port=P` once it accepts connections.
        var text = ""
        let reader = output.fileHandleForReading
        while !text.contains("\n") {
            let data = reader.availableData
            if data.isEmpty {
                throw LoadError(description: "the server (\(mode)) exited before listening")
            }
            text += String(decoding: data, as: UTF8.self)
        }
        guard let line = text.split(separator: "\n").first, line.hasPrefix("port="), let port = Int(line.dropFirst(5))
        else {
            process.terminate()
            throw LoadError(description: "unexpected server output: \(text)")
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
}
