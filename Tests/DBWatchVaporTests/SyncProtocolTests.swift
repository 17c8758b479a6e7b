#if Vapor
    import AsyncHTTPClient
    import DBWatch
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    import DBWatchVapor
    import Foundation
    import Testing

    /// The sync protocol over Vapor's adapter, against a real Vapor server
    /// on 127.0.0.1: server-sent events with POSTs beside them, a
    /// WebSocket, the catch-up over plain HTTP, `dbwatch.js`, and the end
    /// of every connection on graceful shutdown.
    @Suite("Vapor: the sync protocol")
    struct SyncProtocolTests {
        /// The test server's leaderboard now, fetched directly.
        func leaderboard(_ server: VaporServer, limit: Int = 10) async throws -> [RankedPlayer] {
            try await server.database.read { db in try Leaderboard(limit: limit).fetch(db) }
        }

        func addPlayer(_ server: VaporServer, _ name: String, _ score: Int) async throws {
            try await server.database.write { db in
                try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: [name, score])
            }
        }

        static func message(_ text: String?) throws -> SyncMessage {
            let text = try #require(text)
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            return SyncMessage(type: fields["type"] as? String ?? "", fields: fields)
        }

        @Test func aSubscriptionGetsASnapshotThenKeyedChangesThatGiveTheFreshResult() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
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

        @Test func oneCommitThatChangesTwoSubscriptionsIsOneBatch() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
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
                try await VaporServer.with { server in
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

        @Test func onlyTheOwnerOfASessionPostsToIt() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
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

        @Test func refusedMessagesAreAnsweredAndSentOnTheConnection() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
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
        /// with 400 in the one error shape (Vapor's own limit for a
        /// collected body, 16 KiB, does not apply).
        @Test func aBodyLongerThan64KiBIsRefusedWith400() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
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

        @Test func theJavaScriptClientIsServed() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
                    let answer = try await fetch("\(server.baseURL)/dbwatch.js")
                    #expect(answer.status == 200)
                    #expect(answer.headers["content-type"]?.hasPrefix("text/javascript") == true)
                    #expect(answer.headers["cache-control"] == "no-cache")
                    #expect(answer.body.contains("export function applyChanges"))
                }
            }
        }

        @Test func aSubscriptionOnASocketGetsASnapshotThenChanges() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
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

        /// Vapor's default frame size (16 KiB) does not limit the sync
        /// socket: a message of up to 64 KiB is read; a longer one closes
        /// the connection, and its session ends.
        @Test func aSocketTakesMessagesOf64KiB() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
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

        @Test func aCatchUpAnswersTheStepsWithItsCacheControl() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
                    let watcher = try await SyncTestClient.connect(server.baseURL)
                    try await watcher.subscribe("top", to: "top", params: ["n": "20"])
                    var results = SyncResults()
                    let first = try await watcher.next()
                    try results.apply(first)
                    let since = try #require(first.position)
                    let held = try #require(results.results["top"])

                    // Nothing after `since` yet: no steps, not stored.
                    let current = try await CatchUpAnswer.fetch(
                        server.baseURL, query: "top", params: ["n": "20"], since: since)
                    #expect(current.status == 200, "\(current.body)")
                    #expect(current.stepCount == 0)
                    #expect(current.complete == false)
                    #expect(current.headers["cache-control"] == "no-store")

                    // Commits until the first complete answer's end, since + lowbit(since), is passed.
                    let start = try #require(first.sequence)
                    var latest = since
                    var index = 0
                    while try #require(UInt64(latest.split(separator: "/")[1])) <= start + (start & (~start &+ 1)) {
                        try await addPlayer(server, "player\(index)", 7 * index % 100)
                        latest = try #require(try await watcher.next().position)
                        index += 1
                    }
                    // Complete answers from `since` on, then the last one, at
                    // the server's position: the fresh value.
                    var position = since
                    var rows = held
                    var cacheControls: [String] = []
                    while cacheControls.count < 10 {
                        let answer = try await CatchUpAnswer.fetch(
                            server.baseURL, query: "top", params: ["n": "20"], since: position)
                        #expect(answer.status == 200, "\(answer.body)")
                        #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
                        cacheControls.append(answer.headers["cache-control"] ?? "")
                        rows = try answer.applied(to: rows)
                        guard answer.complete == true else {
                            position = try #require(answer.position)
                            break
                        }
                        // With an owner or credentials, only the caller's cache may keep it.
                        for headers in [[("X-User", "ann")], [("Authorization", "Bearer t")], [("Cookie", "s=1")]] {
                            let owned = try await CatchUpAnswer.fetch(
                                server.baseURL, query: "top", params: ["n": "20"], since: position, headers: headers)
                            #expect(owned.body == answer.body)
                            #expect(owned.headers["cache-control"] == "private, max-age=31536000, immutable")
                        }
                        position = try #require(answer.position)
                    }
                    #expect(cacheControls.count >= 2, "complete answers, then the last one")
                    #expect(cacheControls.dropLast().allSatisfy { $0 == "public, max-age=31536000, immutable" })
                    #expect(cacheControls.last == "no-store")
                    #expect(position == latest)
                    let decoded = try rows.rows.map { try JSONDecoder().decode(RankedPlayer.self, from: $0.row) }
                    #expect(decoded == (try await leaderboard(server, limit: 20)))

                    // Refusals: in the one error shape, not stored.
                    let unknown = try await CatchUpAnswer.fetch(server.baseURL, query: "nope", since: since)
                    #expect(unknown.status == 404 && unknown.reason == "unknownQuery")
                    #expect(unknown.headers["cache-control"] == "no-store")
                    let noSince = try await CatchUpAnswer.fetch(server.baseURL, query: "top", since: nil)
                    #expect(noSince.status == 400 && noSince.reason == "badRequest")
                    let otherEpoch = try await CatchUpAnswer.fetch(server.baseURL, query: "top", since: "elsewhere/1")
                    #expect(otherEpoch.status == 410 && otherEpoch.reason == "positionTooOld")
                }
            }
        }

        @Test func gracefulShutdownEndsEveryConnectionWithEnd() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
                    let client = try await SyncTestClient.connect(server.baseURL)
                    try await client.subscribe("top", to: "top")
                    #expect(try await client.next().type == "batch")
                    let socketReady = Gate()
                    let socketEnded = Gate()
                    async let socket: Void = TestWebSocket.connect("ws://127.0.0.1:\(server.port)/sync/socket") {
                        socket in
                        #expect(try Self.message(try await socket.nextText()).type == "hello")
                        socketReady.open()
                        let end = try Self.message(try await socket.nextText())
                        #expect(end.type == "end" && end["reason"] as? String == "shutdown")
                        #expect(try await socket.nextText() == nil, "then the server closes the socket")
                        socketEnded.open()
                    }
                    await socketReady.wait()
                    try await waitUntil { server.live.statistics.clientsConnected == 2 }

                    async let shutdown: Void = server.shutDown()
                    let end = try await client.next()
                    #expect(end.type == "end" && end["reason"] as? String == "shutdown")
                    #expect(try await client.stream.next() == nil, "then the stream ends")
                    await socketEnded.wait()
                    try await socket
                    try await shutdown
                    #expect(server.live.statistics.clientsConnected == 0)
                }
            }
        }

        /// Once the live queries shut down (Vapor's server still answering),
        /// a new connection is refused: over server-sent events with a 503,
        /// over a WebSocket with the refusal as its one message.
        @Test func newConnectionsAreRefusedOnceTheLiveQueriesStopped() async throws {
            let held = HeldShutdown()
            try await withTimeout {
                try await VaporServer.with(shutdownAfterLiveQueries: held) { server in
                    async let shutdown: Void = server.shutDown()
                    await held.reached.wait()
                    let refused = try await EventStream.open("\(server.baseURL)/sync")
                    #expect(refused.status == 503)
                    #expect(try await refused.remainingBody().contains(#""reason":"shuttingDown""#))
                    try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)/sync/socket") { socket in
                        let refusal = try #require(try await socket.nextText())
                        #expect(refusal.contains(#""reason":"shuttingDown""#))
                        #expect(try await socket.nextText() == nil, "then the server closes the socket")
                    }
                    held.release.open()
                    try await shutdown
                }
            }
        }
    }
#endif
