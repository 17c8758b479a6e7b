import DBWatchDelivery
import DBWatchTestSupport
import Foundation
import Testing

/// Changes move as few rows as possible: the rows they leave in place are a
/// longest increasing subsequence of the common keys' old positions.
@Suite("Keyed changes: as few moves as possible")
struct KeyedChangesMinimalityTests {
    struct Player: Identifiable, Encodable {
        var id: Int
        var name: String
        var score: Int
    }

    /// 10,000 players ordered by score, descending, then id.
    static func leaderboard(_ players: [Player]) -> [Player] {
        players.sorted { ($1.score, $0.id) < ($0.score, $1.id) }
    }

    @Test func oneChangedScoreInAnOrderedResultOf10000RowsIsOneUpsertAndItsJSONIsOver100TimesSmaller() throws {
        var players = (0..<10_000).map { Player(id: $0, name: "player \($0)", score: ($0 * 7919) % 100_000) }
        let before = Self.leaderboard(players)
        players[4_321].score = 99_999_999
        let after = Self.leaderboard(players)

        let changes = try checkedChanges(try KeyedRows(identifying: before), try KeyedRows(identifying: after))
        #expect(changes.deletes.isEmpty)
        #expect(changes.upserts.count == 1)
        #expect(changes.upserts.first?.index == 0)
        #expect(changes.upserts.first?.key == json("4321"))

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let whole = try encoder.encode(after).count
        let keyed = changes.encodedJSON().count
        #expect(whole >= 100 * keyed, "whole value \(whole) B, changes \(keyed) B: \(whole / max(keyed, 1)) times")
    }

    /// The length of a longest strictly increasing subsequence, the slow
    /// and obvious way (O(n²)).
    static func longestIncreasingLength(_ values: [Int]) -> Int {
        var lengths = [Int](repeating: 1, count: values.count)
        for i in values.indices {
            for j in 0..<i where values[j] < values[i] { lengths[i] = max(lengths[i], lengths[j] + 1) }
        }
        return lengths.max() ?? 0
    }

    @Test(arguments: [0x26D1, 0x5EED] as [UInt64])
    func randomResultsMoveExactlyTheRowsOutsideALongestIncreasingSubsequence(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        for round in 0..<500 {
            let universe = Array("abcdefghijklmnop").map(String.init)
            func result() -> [String] {
                universe.shuffled(using: &generator).prefix(Int.random(in: 0...universe.count, using: &generator))
                    .map { $0 + String(Int.random(in: 1...2, using: &generator)) }
            }
            let (oldWords, newWords) = (result(), result())
            let old = KeyedRows.words(oldWords.joined(separator: " "))
            let new = KeyedRows.words(newWords.joined(separator: " "))
            let changes = try checkedChanges(old, new)

            let oldKeys = oldWords.map { $0.prefix(1) }
            let newKeys = newWords.map { $0.prefix(1) }
            let common = newKeys.compactMap { oldKeys.firstIndex(of: $0) }
            let movedOrInserted = changes.upserts.filter { $0.index != nil }.count
            let inserted = newKeys.count - common.count
            #expect(
                movedOrInserted - inserted == common.count - Self.longestIncreasingLength(common),
                "seed \(seed), round \(round): \(oldWords) -> \(newWords)")
            #expect(changes.deletes.count == oldKeys.count - common.count, "seed \(seed), round \(round)")
            let indexes = changes.upserts.compactMap(\.index)
            #expect(indexes == indexes.sorted(), "seed \(seed), round \(round)")
        }
    }
}
