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
    /// The executable's name, looked up in `PATH` and the usual folders.
    public let name: String
    /// The Debian package that installs it.
    public let package: String
    /// What the tests do with it, for the skip's message.
    public let purpose: String

    /// Debian's `chromium`, headless: the page tests.
    public static let chromium = RequiredProgram(
        name: "chromium", package: "chromium", purpose: "the page tests drive a headless browser")
    /// The stock `sqlite3` shell: a second process writing the database.
    public static let sqlite3 = RequiredProgram(
        name: "sqlite3", package: "sqlite3", purpose: "a second process writes the database with the sqlite3 shell")
    /// `tmux`: a real terminal for `dbwatch`'s screen.
    public static let tmux = RequiredProgram(
        name: "tmux", package: "tmux", purpose: "the terminal tests run dbwatch in tmux")

    /// Whether skipped tests must run and fail instead (`DBWATCH_TESTS_REQUIRE_ALL=1`).
    public static var skipsAreFailures: Bool {
        ProcessInfo.processInfo.environment["DBWATCH_TESTS_REQUIRE_ALL"] == "1"
    }

    /// The program's path, if it is installed.
    public var path: String? {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return (folders + ["/usr/bin", "/usr/local/bin", "/bin"]).lazy.map { "\($0)/\(name)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Whether the program is installed.
    public var isInstalled: Bool { path != nil }

    /// Why its tests are skipped, and how to run them.
    public var skipReason: String {
        "`\(name)` is not installed (\(purpose)): install it with `apt-get install -y \(package)`; "
            + "DBWATCH_TESTS_REQUIRE_ALL=1 (set by .ci/run) runs these tests anyway"
    }

    /// The trait of a test or suite that needs the program: enabled when it
    /// is installed or skips are failures, else skipped with ``skipReason``.
    public var trait: ConditionTrait {
        .enabled(if: isInstalled || Self.skipsAreFailures, Comment(rawValue: skipReason))
    }
}
