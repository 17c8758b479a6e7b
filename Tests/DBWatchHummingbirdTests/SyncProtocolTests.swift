import AsyncHTTPClient
import DBWatch
import DBWatchDelivery
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// The sync protocol over server-sent events and POSTs, against a real
/// Hummingbird server: snapshots then keyed changes, one batch per commit
/// across a connection's subscriptions, positions and resume, errors.
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

    @Test func aSubscriptionGetsASnapshotThenKeyedChangesThatGiveTheFreshResult() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                #expect(try await client.subscribe("top", to: "top", params: ["n": "3"]) == 202)
                var results = SyncResults()
                let first = try await client.next()
                #expect(first.type == "batch")
                #expect(first.changes["top"]?["kind"] as? String == "snapshot")
                #expect(first.changes["top"]?["reason"] as? String == "subscribed")
                try results.apply(first)
                #expect(try results.rows("top", as: RankedPlayer.self) == (try await leaderboard(server, limit: 3)))

                var lastSequence = try #require(first.sequence)
                for (name, score) in [("carol", 90), ("dave", 10), ("erin", 200), ("frank", 85)] {
                    try await addPlayer(server, name, score)
                    let expected = try await leaderboard(server, limit: 3)
                    if try results.rows("top", as: RankedPlayer.self) == expected { continue }  // dave: off the top 3
                    let batch = try await client.next()
                    #expect(batch.type == "batch")
                    let sequence = try #require(batch.sequence)
                    #expect(sequence > lastSequence, "positions grow")
                    lastSequence = sequence
                    #expect(batch.changes["top"]?["kind"] as? String == "changes")
                    try results.apply(batch)
                    #expect(try results.rows("top", as: RankedPlayer.self) == expected)
                }
            }
        }
    }

    @Test func oneCommitThatChangesTwoSubscriptionsIsOneBatch() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                try await client.subscribe("top", to: "top")
                try await client.subscribe("count", to: "count")
                var results = SyncResults()
                // The first values: one batch or two, whichever the fetches allow.
                while results.results["top"] == nil || results.values["count"] == nil {
                    try results.apply(try await client.next())
                }
                #expect(results.values["count"] as? Int == 2)

                for (index, name) in ["carol", "dave", "erin"].enumerated() {
                    try await addPlayer(server, name, 50 - index)
                    let batch = try await client.next()
                    #expect(batch.type == "batch")
                    #expect(Set(batch.changes.keys) == ["top", "count"], "both changes in one batch")
                    try results.apply(batch)
                    #expect(results.values["count"] as? Int == 3 + index)
                    #expect(try results.rows("top", as: RankedPlayer.self) == (try await leaderboard(server)))
                }
            }
        }
    }

    @Test func aClientThatResumesFromItsPositionGetsTheChangesItMissed() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                // Another client keeps the query observed while the first is away.
                let watcher = try await SyncTestClient.connect(server.baseURL)
                try await watcher.subscribe("top", to: "top")
                _ = try await watcher.next()

                let leaving = HTTPClient(eventLoopGroupProvider: .singleton)
                let client = try await SyncTestClient.connect(server.baseURL, client: leaving)
                try await client.subscribe("top", to: "top")
                var results = SyncResults()
                let first = try await client.next()
                try results.apply(first)
                let position = try #require(first.position)
                try await leaving.shutdown()

                for (name, score) in [("carol", 90), ("dave", 95), ("erin", 5)] {
                    try await addPlayer(server, name, score)
                    _ = try await watcher.next()
                }
                let again = try await SyncTestClient.connect(server.baseURL)
                try await again.subscribe("top", to: "top", position: position)
                let resumed = try await again.next()
                #expect(resumed.changes["top"]?["kind"] as? String == "catchUp")
                #expect((resumed.changes["top"]?["steps"] as? [Any])?.count == 3)
                try results.apply(resumed)
                #expect(try results.rows("top", as: RankedPlayer.self) == (try await leaderboard(server)))
            }
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

    @Test func refusedMessagesAreAnsweredAndSentOnTheConnection() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                let unknown = try await client.send(["type": "subscribe", "id": "x", "query": "nope"])
                #expect(unknown.status == 404)
                #expect(unknown.body.contains(#""reason":"unknownQuery""#))
                let error = try await client.next()
                #expect(error.type == "error" && error["id"] as? String == "x")
                #expect((error["error"] as? [String: Any])?["reason"] as? String == "unknownQuery")

                let bad = try await client.send(["type": "subscribe", "id": "", "query": "top"])
                #expect(bad.status == 400)
                #expect(try await client.next().type == "error")

                #expect(try await client.subscribe("top", to: "top") == 202)
                #expect(try await client.subscribe("top", to: "count") == 409)

                // Another session's id, or another user's: unknown.
                let stranger = try await fetch(
                    "\(server.baseURL)/sync/not-a-session", method: "POST", body: #"{"type":"unsubscribe","id":"top"}"#)
                #expect(stranger.status == 404)
                let otherUser = try await fetch(
                    "\(server.baseURL)/sync/\(client.session)", method: "POST",
                    body: #"{"type":"unsubscribe","id":"top"}"#, headers: [("X-User", "mallory")])
                #expect(otherUser.status == 404)
                #expect(otherUser.body.contains("unknownSession"))
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
                try await client.subscribe("top", to: "top")
                try await client.subscribe("count", to: "count")
                var results = SyncResults()
                while results.results["top"] == nil || results.values["count"] == nil {
                    try results.apply(try await client.next())
                }
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

    @Test func theJavaScriptClientIsServed() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let answer = try await fetch("\(server.baseURL)/dbwatch.js")
                #expect(answer.status == 200)
                #expect(answer.headers["content-type"]?.hasPrefix("text/javascript") == true)
                #expect(answer.body.contains("export function applyChanges"))
            }
        }
    }
}

/// The sync protocol over a WebSocket: the same messages as text frames,
/// the client's messages on the same socket.
@Suite("Sync protocol over a WebSocket")
struct SyncWebSocketTests {
    static func message(_ text: String?) throws -> SyncMessage {
        let text = try #require(text)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return SyncMessage(type: fields["type"] as? String ?? "", fields: fields)
    }

    @Test func aSubscriptionOnASocketGetsASnapshotThenChanges() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)/sync/socket") { socket in
                    let hello = try Self.message(try await socket.nextText())
                    #expect(hello.type == "hello" && hello["protocol"] as? Int == 1)
                    try await socket.send(#"{"type":"subscribe","id":"top","query":"top","params":{"n":"2"}}"#)
                    var results = SyncResults()
                    let first = try Self.message(try await socket.nextText())
                    #expect(first.type == "batch")
                    try results.apply(first)
                    try await server.database.write { db in
                        try db.execute(sql: "INSERT INTO player (name, score) VALUES ('carol', 90)")
                    }
                    let second = try Self.message(try await socket.nextText())
                    #expect(second.changes["top"]?["kind"] as? String == "changes")
                    try results.apply(second)
                    #expect(
                        try results.rows("top", as: RankedPlayer.self).map(\.name) == ["arthur", "carol"])

                    try await socket.send(#"{"type":"subscribe","id":"x","query":"nope"}"#)
                    let refused = try Self.message(try await socket.nextText())
                    #expect(refused.type == "error" && refused["id"] as? String == "x")
                    try await socket.send("not json")
                    let bad = try Self.message(try await socket.nextText())
                    #expect(bad.type == "error" && bad["id"] == nil)
                    try await socket.close()
                }
            }
        }
    }
}
