#if Vapor
    import DBWatch
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    import DBWatchVapor
    import Foundation
    import Testing

    /// The sync protocol over Vapor's adapter, against a real Vapor server
    /// on 127.0.0.1: the catch-up over plain HTTP, and connections refused
    /// once the live queries stopped while Vapor still answers. What every
    /// adapter must serve alike is tested on each (`DBWatchAdapterTests`).
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
