import AsyncHTTPClient
import DBWatch
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// The sync protocol over every adapter, against a real server on
/// 127.0.0.1: server-sent events with POSTs beside them, a WebSocket,
/// `dbwatch.js`, the limits of a message's size, a session's owner, and
/// the end of every connection on graceful shutdown. The engine's own
/// behaviours (modes, positions of other epochs, unsubscribing, refusals
/// among batches) are tested once, over Hummingbird
/// (`DBWatchHummingbirdTests`).
@Suite("Sync protocol, on every adapter")
struct SyncProtocolTests {
    /// The test server's leaderboard now, fetched directly.
    func leaderboard(_ server: any AdapterServer, limit: Int = 10) async throws -> [RankedPlayer] {
        try await server.database.read { db in try Leaderboard(limit: limit).fetch(db) }
    }

    func addPlayer(_ server: any AdapterServer, _ name: String, _ score: Int) async throws {
        try await server.database.write { db in
            try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: [name, score])
        }
    }

    static func message(_ text: String?) throws -> SyncMessage {
        let text = try #require(text)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return SyncMessage(type: fields["type"] as? String ?? "", fields: fields)
    }

    @Test(arguments: Adapter.available)
    func aSubscriptionGetsASnapshotThenKeyedChangesThatGiveTheFreshResult(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
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
                    // dave: off the top 3, no batch.
                    if try results.rows("top", as: RankedPlayer.self) == expected { continue }
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

    @Test(arguments: Adapter.available)
    func oneCommitThatChangesTwoSubscriptionsIsOneBatch(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                var results = try await client.subscribeToTopAndCount()
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

    @Test(arguments: Adapter.available)
    func aClientThatResumesFromItsPositionGetsTheChangesItMissed(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
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
                // The client that left ended its session: only two remain.
                try await waitUntil { server.live.statistics.clientsConnected == 2 }
            }
        }
    }

    @Test(arguments: Adapter.available)
    func onlyTheOwnerOfASessionPostsToIt(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let client = try await SyncTestClient.connect(server.baseURL, headers: [("X-User", "ann")])
                #expect(try await client.subscribe("top", to: "top") == 202)
                #expect(try await client.next().type == "batch")

                let unsubscribe = ["type": "unsubscribe", "id": "top"]
                let otherUser = try await client.send(unsubscribe, headers: [("X-User", "mallory")])
                #expect(otherUser.status == 404)
                #expect(otherUser.body.contains(#""reason":"unknownSession""#))
                let nobody = try await client.send(unsubscribe, headers: [])
                #expect(nobody.status == 404)
                let stranger = try await fetch(
                    "\(server.baseURL)/sync/not-a-session", method: "POST",
                    body: #"{"type":"unsubscribe","id":"top"}"#, headers: [("X-User", "ann")])
                #expect(stranger.status == 404)
                #expect(stranger.headers["content-type"]?.hasPrefix("application/json") == true)

                // The subscription is still there: its changes still come.
                try await addPlayer(server, "carol", 500)
                #expect(try await client.next().changes["top"]?["kind"] as? String == "changes")
                #expect(try await client.send(unsubscribe).status == 202)
            }
        }
    }

    @Test(arguments: Adapter.available)
    func refusedMessagesAreAnsweredAndSentOnTheConnection(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
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
            }
        }
    }

    /// A body of 64 KiB is read whole; a longer one is refused whole
    /// with 400 in the one error shape (the frameworks' own limits
    /// for a collected body, Vapor's 16 KiB, do not apply).
    @Test(arguments: Adapter.available)
    func aBodyLongerThan64KiBIsRefusedWith400(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                let message = #"{"type":"subscribe","id":"top","query":"top"}"#
                let limit = 64 * 1024
                let longest = message + String(repeating: " ", count: limit - message.utf8.count)
                let url = "\(server.baseURL)/sync/\(client.session)"
                let accepted = try await fetch(url, method: "POST", body: longest)
                #expect(accepted.status == 202, "\(accepted.body)")
                #expect(try await client.next().type == "batch")

                let tooLong = try await fetch(
                    url, method: "POST", body: longest.replacingOccurrences(of: "top", with: "two") + " ")
                #expect(tooLong.status == 400)
                #expect(tooLong.body.contains(#""reason":"badRequest""#))
                #expect(tooLong.body.contains("64 KiB"))
                // Not handled: no subscription `two`, and the session goes on.
                #expect(try await client.send(["type": "unsubscribe", "id": "two"]).status == 202)
                try await addPlayer(server, "carol", 500)
                let batch = try await client.next()
                #expect(Set(batch.changes.keys) == ["top"])
            }
        }
    }

    @Test(arguments: Adapter.available)
    func theJavaScriptClientIsServed(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let answer = try await fetch("\(server.baseURL)/dbwatch.js")
                #expect(answer.status == 200)
                #expect(answer.headers["content-type"]?.hasPrefix("text/javascript") == true)
                #expect(answer.headers["cache-control"] == "no-cache")
                #expect(answer.body.contains("export function applyChanges"))
            }
        }
    }

    @Test(arguments: Adapter.available)
    func aSubscriptionOnASocketGetsASnapshotThenChanges(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)/sync/socket") { socket in
                    let hello = try Self.message(try await socket.nextText())
                    #expect(hello.type == "hello" && hello["protocol"] as? Int == 1)
                    try await socket.send(#"{"type":"subscribe","id":"top","query":"top","params":{"n":"2"}}"#)
                    var results = SyncResults()
                    let first = try Self.message(try await socket.nextText())
                    #expect(first.type == "batch")
                    #expect(first.changes["top"]?["kind"] as? String == "snapshot")
                    try results.apply(first)
                    try await addPlayer(server, "carol", 90)
                    let second = try Self.message(try await socket.nextText())
                    #expect(second.changes["top"]?["kind"] as? String == "changes")
                    try results.apply(second)
                    #expect(
                        try results.rows("top", as: RankedPlayer.self) == (try await leaderboard(server, limit: 2)))

                    try await socket.send(#"{"type":"subscribe","id":"x","query":"nope"}"#)
                    let refused = try Self.message(try await socket.nextText())
                    #expect(refused.type == "error" && refused["id"] as? String == "x")
                    try await socket.send("not json")
                    let bad = try Self.message(try await socket.nextText())
                    #expect(bad.type == "error" && bad["id"] == nil)
                    try await socket.close()
                }
                try await waitUntil { server.live.statistics.clientsConnected == 0 }
            }
        }
    }

    /// The frameworks' default frame sizes (Vapor's 16 KiB) do not limit
    /// the sync socket: a message of up to 64 KiB is read; a longer one closes
    /// the connection, and its session ends.
    @Test(arguments: Adapter.available)
    func aSocketTakesMessagesOf64KiB(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)/sync/socket") { socket in
                    #expect(try Self.message(try await socket.nextText()).type == "hello")
                    let message = #"{"type":"subscribe","id":"top","query":"top"}"#
                    let longest = message + String(repeating: " ", count: 64 * 1024 - message.utf8.count)
                    try await socket.send(longest)
                    #expect(try Self.message(try await socket.nextText()).type == "batch")
                    try await socket.send(longest + " ")
                    #expect(try await socket.nextText() == nil, "the server closed the connection")
                }
                // Its feed lingers (`syncLinger`); the connection is gone.
                try await waitUntil { server.live.statistics.clientsConnected == 0 }
            }
        }
    }

    /// Graceful shutdown ends every sync connection: a stream with its
    /// final `end`, a socket with at most that message before the close
    /// (Vapor's adapter writes it first; Hummingbird closes its WebSockets
    /// at the same time, as for live queries' sockets).
    @Test(arguments: Adapter.available)
    func gracefulShutdownEndsEveryConnectionWithEnd(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                try await client.subscribe("top", to: "top")
                #expect(try await client.next().type == "batch")
                let socketReady = Gate()
                let received = Protected<[SyncMessage]>([])
                async let socket: Void = TestWebSocket.connect("ws://127.0.0.1:\(server.port)/sync/socket") {
                    socket in
                    defer { socketReady.open() }
                    #expect(try Self.message(try await socket.nextText()).type == "hello")
                    socketReady.open()
                    while let text = try await socket.nextText() {
                        let message = try Self.message(text)
                        received.withLock { $0.append(message) }
                    }
                }
                await socketReady.wait()
                try await waitUntil { server.live.statistics.clientsConnected == 2 }

                async let shutdown: Void = server.shutDown()
                let end = try await client.next()
                #expect(end.type == "end" && end["reason"] as? String == "shutdown")
                #expect(try await client.stream.next() == nil, "then the stream ends")
                try await socket
                try await shutdown
                let messages = received.withLock { $0 }
                #expect(messages.count <= 1)
                #expect(messages.allSatisfy { $0.type == "end" && $0["reason"] as? String == "shutdown" })
                #if Vapor
                    if adapter == .vapor { #expect(messages.count == 1) }
                #endif
                #expect(server.live.statistics.clientsConnected == 0)
            }
        }
    }
}
