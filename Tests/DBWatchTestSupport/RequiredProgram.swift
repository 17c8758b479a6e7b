import Foundation
import Testing

/// A program that some tests need and a fresh machine may lack. Their tests
/// are skipped there, visibly, with the command that installs it; with
/// `DBWATCH_TESTS_REQUIRE_ALL=1` in the environment (`.ci/run` sets it)
/// they run anyway and fail, so CI never passes by skipping.
///
/// ```swift
/// @Suite("the page in a browser", RequiredProgram.chromium.trait)
/// ```
public struct RequiredProgram: Sendable {
    /// The executable's name, looked up in `PATH` and the usual folders
    /// (for ``postgresql``, a set of programs, the package's name).
    public let name: String
    /// The Debian package that installs it.
    public let package: String
    /// What the tests do with it, for the skip's message.
    public let purpose: String
    /// What is missing, for the skip's message: the name in backquotes, or
    /// a sentence for a set of programs.
    let missing: String
    /// Finds the program: its path, or nil.
    private let locate: @Sendable () -> String?

    init(
        name: String, package: String, purpose: String, missing: String? = nil,
        locate: (@Sendable () -> String?)? = nil
    ) {
        self.name = name
        self.package = package
        self.purpose = purpose
        self.missing = missing ?? "`\(name)` is not installed"
        self.locate = locate ?? { Self.inPath(name) }
    }

    /// Debian's `chromium`, headless: the page tests.
    public static let chromium = RequiredProgram(
        name: "chromium", package: "chromium", purpose: "the page tests drive a headless browser")
    /// The stock `sqlite3` shell: a second process writing the database.
    public static let sqlite3 = RequiredProgram(
        name: "sqlite3", package: "sqlite3", purpose: "a second process writes the database with the sqlite3 shell")
    /// `tmux`: a real terminal for `dbwatch`'s screen.
    public static let tmux = RequiredProgram(
        name: "tmux", package: "tmux", purpose: "the terminal tests run dbwatch in tmux")
    /// `openssl`: the certificates of the TLS tests.
    public static let openssl = RequiredProgram(
        name: "openssl", package: "openssl", purpose: "the TLS tests make their certificates with it")
    /// `node`: the JavaScript client's tests (`node --test`).
    public static let node = RequiredProgram(
        name: "node", package: "nodejs", purpose: "the JavaScript client's tests run in node")
    /// PostgreSQL's server programs (`initdb`, `pg_ctl`, `postgres`,
    /// `psql`): the tests that start a ``PostgresServer``. Its path is the
    /// programs' folder (see ``PostgresServer/programsFolder``).
    public static let postgresql = RequiredProgram(
        name: "postgresql", package: "postgresql",
        purpose: "each test starts a PostgreSQL server of its own",
        missing: "PostgreSQL's server programs (initdb, pg_ctl, postgres, psql) were not found "
            + "(\(PostgresServer.programsFolderLookup))",
        locate: { PostgresServer.programsFolder })

    /// Whether skipped tests must run and fail instead (`DBWATCH_TESTS_REQUIRE_ALL=1`).
    public static var skipsAreFailures: Bool {
        ProcessInfo.processInfo.environment["DBWATCH_TESTS_REQUIRE_ALL"] == "1"
    }

    /// The program's path (for ``postgresql``, the programs' folder), if it
    /// is installed.
    public var path: String? { locate() }

    /// Whether the program is installed.
    public var isInstalled: Bool { path != nil }

    /// Why its tests are skipped, and how to run them.
    public var skipReason: String {
        "\(missing) (\(purpose)): install it with `apt-get install -y \(package)`; "
            + "DBWATCH_TESTS_REQUIRE_ALL=1 (set by .ci/run) runs these tests anyway"
    }

    /// The trait of a test or suite that needs the program: enabled when it
    /// is installed or skips are failures, else skipped with ``skipReason``.
    public var trait: ConditionTrait {
        .enabled(if: isInstalled || Self.skipsAreFailures, Comment(rawValue: skipReason))
    }

    /// The first executable `name` in `PATH` and the usual folders.
    static func inPath(_ name: String) -> String? {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return (folders + ["/usr/bin", "/usr/local/bin", "/bin"]).lazy.map { "\($0)/\(name)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }
}
