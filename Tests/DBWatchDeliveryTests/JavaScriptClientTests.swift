import DBWatchTestSupport
import Foundation
import Testing

/// The JavaScript client (`Sources/DBWatchDelivery/Client/dbwatch.js`):
/// its own tests, `Tests/JavaScript/*.test.mjs`, run by node's test runner.
@Suite("The JavaScript client", RequiredProgram.node.trait)
struct JavaScriptClientTests {
    /// The repository's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test func itsNodeTestsPass() async throws {
        let node = try #require(RequiredProgram.node.path)
        let run = try await ChildProcess.run([node, "--test", Self.root + "/Tests/JavaScript/"])
        #expect(run.exitStatus == 0, "\(run.stdout)\n\(run.stderr)")
        // Every test ran and passed: a runner that found no file passes too.
        let tests = run.stdout.firstMatch(of: /# tests (\d+)/).flatMap { Int($0.1) }
        let passed = run.stdout.firstMatch(of: /# pass (\d+)/).flatMap { Int($0.1) }
        #expect((tests ?? 0) > 0 && passed == tests, "\(run.stdout)")
    }
}
