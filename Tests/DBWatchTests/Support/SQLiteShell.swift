import DBWatchTestSupport
import Foundation

/// The stock `sqlite3` shell, as a second process writing a database.
enum SQLiteShell {
    static let path = "/usr/bin/sqlite3"
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// Runs `sql` in a new `sqlite3` process and returns its output;
    /// `busyTimeout` (milliseconds) makes it wait for locks like any writer
    /// sharing a rollback-journal database with readers must.
    @discardableResult
    static func run(_ sql: String, on database: String, busyTimeout: Int? = nil) async throws -> String {
        let arguments = ["-bail"] + (busyTimeout.map { ["-cmd", ".timeout \($0)"] } ?? []) + [database, sql]
        return try await withTimeout {
            // The blocking reads and waits run on a thread of their own, not
            // on the cooperative pool that the rest of the tests share.
            try await withCheckedThrowingContinuation { continuation in
                Thread {
                    continuation.resume(with: Result { try runBlocking(arguments) })
                }.start()
            }
        }
    }

    private static func runBlocking(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw ShellError(message: "sqlite3 exited with \(process.terminationStatus): \(text)")
        }
        return text
    }

    struct ShellError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// An interactive `sqlite3` process fed through its standard input.
    final class Session: Sendable {
        let process: Process
        private let input: FileHandle
        private let output: FileHandle

        init(database: String) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: SQLiteShell.path)
            process.arguments = [database]
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            process.standardError = output
            try process.run()
            self.process = process
            self.input = input.fileHandleForWriting
            self.output = output.fileHandleForReading
        }

        /// Sends `sql`, then waits until the shell has executed it.
        func send(_ sql: String) async throws {
            let marker = "done-\(UUID().uuidString)"
            try input.write(contentsOf: Data("\(sql)\nSELECT '\(marker)';\n".utf8))
            let output = self.output
            try await withTimeout {
                // The blocking reads run on a thread of their own, not on the
                // cooperative pool that the rest of the tests share.
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    Thread {
                        continuation.resume(
                            with: Result {
                                var seen = ""
                                while !seen.contains(marker) {
                                    let data = output.availableData
                                    if data.isEmpty { throw ShellError(message: "sqlite3 ended: \(seen)") }
                                    seen += String(decoding: data, as: UTF8.self)
                                }
                            })
                    }.start()
                }
            }
        }

        /// Kills the process with SIGKILL, mid-whatever it was doing.
        func kill() {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
