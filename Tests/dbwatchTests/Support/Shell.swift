import DBWatchTestSupport
import Foundation

/// Other programs the tests run: the stock `sqlite3` shell (a second process
/// writing the database) and `tmux` (a real terminal).
enum Shell {
    /// `/usr/bin/sqlite3`.
    static let sqlite3 = "/usr/bin/sqlite3"

    /// Whether `sqlite3` is installed.
    static var hasSQLite3: Bool { FileManager.default.isExecutableFile(atPath: sqlite3) }

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
        let (pid, output, error) = try Spawner.spawn(
            [program] + arguments, environment: ProcessInfo.processInfo.environment)
        let errorHandle = FileHandle(fileDescriptor: error, closeOnDealloc: true)
        let errorText = Protected("")
        let errorRead = DispatchSemaphore(value: 0)
        let errorReader = Thread {
            let data = errorHandle.readDataToEndOfFile()
            errorText.withLock { $0 = String(decoding: data, as: UTF8.self) }
            errorRead.signal()
        }
        errorReader.start()
        let data = FileHandle(fileDescriptor: output, closeOnDealloc: true).readDataToEndOfFile()
        let status = Spawner.waitForExit(of: pid)
        errorRead.wait()
        guard status == 0 else {
            let message = errorText.withLock { $0 }
            throw ShellError(message: "\(program) \(arguments) ended with status \(status): \(message)")
        }
        return String(decoding: data, as: UTF8.self)
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

/// Runs `body`, which blocks, on a thread of its own, and waits for it
/// without blocking a thread of the cooperative pool. That pool has one
/// thread per core for all the tests running in parallel: on two cores, two
/// tests waiting there for slow programs stalled every other test, some of
/// them past their timeouts.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
