import DBWatchTestSupport
import Foundation

/// Other programs the tests run: the stock `sqlite3` shell (a second process
/// writing the database) and `tmux` (a real terminal).
enum Shell {
    /// `/usr/bin/sqlite3`.
    static let sqlite3 = "/usr/bin/sqlite3"

    /// The path of `tmux`, if installed.
    static let tmux: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Runs `sql` with `sqlite3` on `database` and returns its output; throws
    /// when it fails.
    @discardableResult
    static func sqlite(_ sql: String, on database: String) throws -> String {
        try run(sqlite3, ["-bail", database, sql])
    }

    /// Runs a program to the end and returns its standard output; throws
    /// when it exits with another status than 0.
    ///
    /// Output is read to the end of the pipes: a program that leaves a
    /// daemon (the `tmux` server) must detach it from them, as tmux does.
    /// Blocks the calling thread: for slow programs, ``runOnOwnThread(_:_:)``.
    @discardableResult
    static func run(_ program: String, _ arguments: [String]) throws -> String {
        let result = try ChildProcess.runBlocking([program] + arguments)
        guard result.exitStatus == 0 else {
            throw ShellError(
                message: "\(program) \(arguments) ended with status \(result.exitStatus ?? -1): \(result.stderr)")
        }
        return result.stdout
    }

    /// ``run(_:_:)`` on a thread of its own, for a program that may take
    /// seconds (the `dbwatch` binary starts slowly under the thread
    /// sanitizer on a loaded machine).
    @discardableResult
    static func runOnOwnThread(_ program: String, _ arguments: [String]) async throws -> String {
        try await onOwnThread { try run(program, arguments) }
    }

    /// A program that failed.
    struct ShellError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
