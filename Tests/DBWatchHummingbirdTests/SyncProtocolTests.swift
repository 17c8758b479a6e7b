import AsyncHTTPClient
import DBWatch
import DBWatchDelivery
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// The sync protocol's engine over server-sent events and POSTs, against a
/// real Hummingbird server: positions of other epochs, modes,
/// unsubscribing, refusals among batches. What every adapter must serve
/// alike is tested on each (`DBWatchAdapterTests`).
@Suite("Sync protocol over server-sent events")
struct SyncProtocolTests {
    /// The test server's leaderboard now, fetched directly.
    func leaderboard(_ server: HummingbirdServer, limit: Int = 10) async throws -> [RankedPlayer] {
        try await server.database.read { db in try Leaderboard(limit: limit).fetch(db) }
    }

    func addPlayer(_ server: HummingbirdServer, _ name: String, _ score: Int) async throws {
        try await server.database.write { db in
            try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: [name, score])
        }
    }

    @Test func aPositionOfAnotherEpochOrFromTheFutureGetsASnapshotSaidToBeOne() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                let epoch = try #require(client.helloPosition.split(separator: "/").first)
                try await client.subscribe("a", to: "top", position: "elsewhere/1")
                try await client.subscribe("b", to: "top", params: ["n": "1"], position: "\(epoch)/999999")
                var reasons: [String: String] = [:]
                while reasons.count < 2 {
                    for (id, entry) in try await client.next().changes { reasons[id] = entry["reason"] as? String }
                }
                #expect(reasons == ["a": "resumed", "b": "resumed"])
            }
        }
    }

    @Test func valuesModeSendsWholeValues() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                try await client.subscribe("top", to: "top", params: ["n": "2"], mode: "values")
                let first = try await client.next()
                #expect(first.changes["top"]?["kind"] as? String == "value")
                try await addPlayer(server, "carol", 500)
                let next = try await client.next()
                let value = try #require(next.changes["top"]?["value"] as? [[String: Any]])
                #expect(value.map { $0["name"] as? String } == ["carol", "arthur"])
            }
        }
    }

    @Test func unsubscribedQueriesSendNothingMore() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                _ = try await client.subscribeToTopAndCount()
                #expect(try await client.send(["type": "unsubscribe", "id": "top"]).status == 202)
                try await addPlayer(server, "carol", 500)
                let batch = try await client.next()
                #expect(Set(batch.changes.keys) == ["count"])
            }
        }
    }

    /// Two subscriptions of one query on one connection share its feed:
    /// leaving one leaves the other subscribed, and its changes still come.
    @Test func twoSubscriptionsOfOneQueryAndOneLeaves() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                try await client.subscribe("a", to: "top")
                try await client.subscribe("b", to: "top", mode: "values")
                var results = SyncResults()
                while results.results["a"] == nil || results.values["b"] == nil {
                    try results.apply(try await client.next())
                }
                #expect(try await client.send(["type": "unsubscribe", "id": "a"]).status == 202)
                try await addPlayer(server, "carol", 500)
                let batch = try await client.next()
                #expect(Set(batch.changes.keys) == ["b"])
                let value = try #require(batch.changes["b"]?["value"] as? [[String: Any]])
                #expect(value.first?["name"] as? String == "carol")
                #expect(server.live.statistics.observations == 1)
            }
        }
    }

    /// Refusals and batches both reach the client, whatever their order:
    /// errors wait in the session, not in the one pending frame a batch
    /// would replace.
    @Test func refusalsAreNotLostAmongBatches() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                try await client.subscribe("top", to: "top")
                for index in 0..<5 {
                    _ = try await client.send(["type": "subscribe", "id": "bad\(index)", "query": "nope"])
                    try await addPlayer(server, "player\(index)", index)
                }
                var refused: Set<String> = []
                var results = SyncResults()
                let expected = try await leaderboard(server)
                while try refused.count < 5 || results.rows("top", as: RankedPlayer.self) != expected {
                    let message = try await client.next()
                    if message.type == "error", let id = message["id"] as? String { refused.insert(id) }
                    if message.type == "batch" { try results.apply(message) }
                }
                #expect(refused == Set((0..<5).map { "bad\($0)" }))
            }
        }
    }
}
