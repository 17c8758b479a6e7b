import DBWatch
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// `dbwatch.js` against a real server of every adapter: node runs
/// `Tests/JavaScript/followSyncServer.mjs`, which subscribes with the
/// client to the test server's `top` and `count`, and prints what it holds.
@Suite("The JavaScript client against a server of every adapter", RequiredProgram.node.trait)
struct JavaScriptSyncClientTests {
    static let script =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("JavaScript/followSyncServer.mjs").path

    /// The JSON objects node printed so far.
    static func printed(_ snapshot: ChildProcess.Snapshot) -> [[String: Any]] {
        snapshot.lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    @Test(arguments: Adapter.available)
    func itKeepsTheResultsOfAServerAndAppliesEachCommitAsOneBatch(adapter: Adapter) async throws {
        let node = try #require(RequiredProgram.node.path)
        try await withTimeout {
            try await adapter.withServer { server in
                let child = try ChildProcess.start([node, Self.script, server.baseURL + "/"], input: .pipe)
                defer { child.kill() }
                let expected = { (limit: Int) in
                    try await server.database.read { db in try Leaderboard(limit: limit).fetch(db) }
                        .map { [$0.name, "\($0.score)"] }
                }
                func topRows(_ snapshot: ChildProcess.Snapshot) -> [[String]]? {
                    guard let last = Self.printed(snapshot).last(where: { $0["id"] as? String == "top" }) else {
                        return nil
                    }
                    return (last["rows"] as? [[String: Any]])?.map {
                        [$0["name"] as? String ?? "", "\($0["score"] ?? "")"]
                    }
                }
                _ = try await child.wait(forOutput: #""id":"count""#)
                #expect(topRows(try await child.wait(forOutput: #""kind":"snapshot""#)) == (try await expected(3)))

                // A commit that changes both: one batch with both, then each result is the fresh one.
                let batchesBefore = Self.printed(child.snapshot).filter { $0["batch"] != nil }.count
                try await server.database.write { db in
                    try db.execute(sql: "INSERT INTO player (name, score) VALUES ('carol', 90)")
                }
                try await waitUntil { Self.printed(child.snapshot).filter { $0["batch"] != nil }.count > batchesBefore }
                _ = try await child.wait(forOutput: #""kind":"changes""#)
                let after = child.snapshot
                let batches = Self.printed(after).filter { $0["batch"] != nil }
                #expect(batches.count == batchesBefore + 1)
                #expect((batches.last?["ids"] as? [String])?.count == 2, "the two subscriptions' changes in one batch")
                #expect(topRows(after) == (try await expected(3)))
                try await waitUntil {
                    Self.printed(child.snapshot).last(where: { $0["id"] as? String == "count" })?["value"] as? Int == 3
                }

                try child.write("close\n")
                let exit = try await child.waitForExit()
                #expect(exit.exitStatus == 0, "\(exit)")
                #expect(!exit.stdout.contains("error"), "\(exit)")
            }
        }
    }
}
