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
        let result = try await ChildProcess.run([path] + arguments)
        let text = result.stdout + result.stderr
        guard result.exitStatus == 0 else {
            throw ShellError(message: "sqlite3 exited with \(result.exitStatus ?? -1): \(text)")
        }
        return text
    }

    struct ShellError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// An interactive `sqlite3` process fed through its standard input.
    final class Session: Sendable {
        let process: ChildProcess

        init(database: String) throws {
            process = try ChildProcess.start([SQLiteShell.path, database], input: .pipe)
        }

        /// Sends `sql`, then waits until the shell has executed it.
        func send(_ sql: String) async throws {
            let marker = "done-\(UUID().uuidString)"
            try process.write("\(sql)\nSELECT '\(marker)';\n")
            let snapshot = try await process.wait(for: "sqlite3 to print \(marker)") { snapshot in
                snapshot.stdout.contains(marker) || snapshot.exitStatus != nil
            }
            guard snapshot.stdout.contains(marker) else { throw ShellError(message: "sqlite3 ended: \(snapshot)") }
        }

        /// Kills the process with SIGKILL, mid-whatever it was doing.
        func kill() {
            process.kill()
            process.blockingWaitForExit(seconds: defaultTestTimeout)
        }
    }
}
