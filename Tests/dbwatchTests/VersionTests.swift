import DBWatch
import Foundation
import Testing

/// The version is written once, in the library (`dbWatchVersion`): the
/// command prints it and the changelog's newest entry names it.
@Suite("Version")
struct VersionTests {
    @Test func versionOptionPrintsTheLibraryVersion() async throws {
        let snapshot = try await DBWatchRun.run(["--version"])
        #expect(snapshot.exitStatus == 0, "\(snapshot)")
        #expect(snapshot.stdout == dbWatchVersion + "\n", "\(snapshot)")
    }

    /// The first `## [x.y.z]` heading of CHANGELOG.md is the newest entry.
    @Test func changelogNewestVersionIsTheLibraryVersion() throws {
        let changelog = try String(
            contentsOf: Repository.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## [") }
        let version = newest?.dropFirst(4).prefix { $0 != "]" }
        #expect(version.map(String.init) == dbWatchVersion, "newest entry: \(newest ?? "none")")
    }
}
