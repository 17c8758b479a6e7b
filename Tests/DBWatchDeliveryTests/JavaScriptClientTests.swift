import DBWatchDelivery
import DBWatchTestSupport
import Foundation
import Testing

/// The JavaScript client (`Sources/DBWatchDelivery/Client/dbwatch.js`):
/// its own tests, `Tests/JavaScript/*.test.mjs`, run by node's test runner,
/// and the changes the Swift engine computes, applied by it.
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

    /// A row of the random results: its key's number and a score.
    struct Entry {
        var key: Int
        var score: Int
    }

    /// Random steps of results keyed by numbers, strings and composite keys:
    /// the changes `KeyedChanges.between` computes, applied by the
    /// JavaScript client's `applyChanges`, give the next result.
    @Test func itAppliesTheChangesTheSwiftEngineComputes() async throws {
        let node = try #require(RequiredProgram.node.path)
        var random = SeededGenerator(seed: 26)
        var cases = ""
        for run in 0..<40 {
            let keyOf: (Int) -> String = [{ "\($0)" }, { "\"k\($0)\"" }, { "[\($0),\"x\"]" }][run % 3]
            let keyed = { (entries: [Entry]) in
                try KeyedRows(
                    entries.map { KeyedRow(key: Data(keyOf($0.key).utf8), row: Data("[\($0.key),\($0.score)]".utf8)) })
            }
            let json = { (entries: [Entry]) in
                "["
                    + entries.map { #"{"key":\#(keyOf($0.key)),"row":[\#($0.key),\#($0.score)]}"# }
                    .joined(separator: ",") + "]"
            }
            var nextKey = 0
            var current: [Entry] = []
            for _ in 0..<Int.random(in: 0...25, using: &random) {
                current.append(Entry(key: nextKey, score: Int.random(in: 0...5, using: &random)))
                nextKey += 1
            }
            for _ in 0..<10 {
                var next = current.filter { _ in Int.random(in: 0..<6, using: &random) != 0 }
                for index in next.indices where Int.random(in: 0..<3, using: &random) == 0 {
                    next[index].score = Int.random(in: 0...5, using: &random)
                }
                for _ in 0..<Int.random(in: 0...3, using: &random) {
                    let entry = Entry(key: nextKey, score: Int.random(in: 0...5, using: &random))
                    next.insert(entry, at: Int.random(in: 0...next.count, using: &random))
                    nextKey += 1
                }
                // Ordered by score (few moves) or shuffled (many).
                if Int.random(in: 0..<2, using: &random) == 0 {
                    next.sort { ($0.score, $0.key) > ($1.score, $1.key) }
                } else {
                    next.shuffle(using: &random)
                }
                let changes = KeyedChanges.between(try keyed(current), try keyed(next))
                let encoded = String(decoding: changes.encodedJSON(), as: UTF8.self)
                cases += #"{"previous":\#(json(current)),"changes":\#(encoded),"next":\#(json(next))}"# + "\n"
                current = next
            }
        }
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("cases.ndjson")
            try cases.write(toFile: path, atomically: true, encoding: .utf8)
            let run = try await ChildProcess.run([node, Self.root + "/Tests/JavaScript/conformance.mjs", path])
            #expect(run.exitStatus == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.stdout == "ok 400\n", "\(run.stdout)")
        }
    }
}
