import DBWatch
import DBWatchDelivery
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// The sync protocol's catch-up over plain HTTP (`GET /sync/queries/NAME?PARAMS&since=POSITION`)
/// against a real Hummingbird server: steps that bring the value at `since`
/// forward, complete answers that never change and say so to caches, the
/// last one up to the server's position, and the refusals.
@Suite("Sync protocol: catching up over plain HTTP")
struct SyncCatchUpTests {
    func addPlayer(_ server: HummingbirdServer, _ name: String, _ score: Int) async throws {
        try await server.database.write { db in
            try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: [name, score])
        }
    }

    func leaderboard(_ server: HummingbirdServer) async throws -> [RankedPlayer] {
        try await server.database.read { db in try Leaderboard(limit: 20).fetch(db) }
    }

    func decoded(_ rows: KeyedRows) throws -> [RankedPlayer] {
        try rows.rows.map { try JSONDecoder().decode(RankedPlayer.self, from: $0.row) }
    }

    @Test func completeAnswersThenTheLastOneBringTheValueAtSinceToTheFreshValue() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                // A subscriber whose batches tell the value at each commit.
                let watcher = try await SyncTestClient.connect(server.baseURL)
                try await watcher.subscribe("top", to: "top", params: ["n": "20"])
                var results = SyncResults()
                let first = try await watcher.next()
                try results.apply(first)
                let epoch = try #require(first.position?.split(separator: "/").first)
                var valueAt = [try #require(first.sequence): try #require(results.results["top"])]
                // One commit at a time, each seen by the watcher: the feed
                // fetched at every commit, so it knows the value at each.
                let names = ["carol", "dave", "erin", "frank", "gina", "hugo", "iris", "jack", "kim", "liam", "mona"]
                for (index, name) in names.enumerated() {
                    try await addPlayer(server, name, 40 + 17 * index % 90)
                    let batch = try await watcher.next()
                    try results.apply(batch)
                    valueAt[try #require(batch.sequence)] = try #require(results.results["top"])
                }
                let latest = try #require(valueAt.keys.max())
                let fresh = try await leaderboard(server)

                // From the value at each position a client may hold, the
                // chain of catch-ups: complete answers, then one that is not.
                var completeAnswers = 0
                for (start, value) in valueAt.sorted(by: { $0.key < $1.key }) {
                    var held = value
                    var sequence = start
                    for _ in 0..<70 {
                        let since = "\(epoch)/\(sequence)"
                        let answer = try await CatchUpAnswer.fetch(
                            server.baseURL, query: "top", params: ["n": "20"], since: since)
                        #expect(answer.status == 200, "\(answer.body)")
                        #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
                        held = try answer.applied(to: held)
                        let next = try #require(answer.position)
                        #expect(next.hasPrefix("\(epoch)/"))
                        let end = try #require(UInt64(next.split(separator: "/")[1]))
                        guard answer.complete == true else {
                            #expect(answer.complete == false)
                            #expect(answer.headers["cache-control"] == "no-store")
                            #expect(end == latest, "the server's position")
                            break
                        }
                        completeAnswers += 1
                        #expect(answer.headers["cache-control"] == "public, max-age=31536000, immutable")
                        // since + lowbit(since), and the value there.
                        #expect(end == sequence + (sequence & (~sequence &+ 1)))
                        let atEnd = try #require(valueAt.filter { $0.key <= end }.max { $0.key < $1.key }?.value)
                        #expect(try decoded(held) == decoded(atEnd))
                        let again = try await CatchUpAnswer.fetch(
                            server.baseURL, query: "top", params: ["n": "20"], since: since)
                        #expect(again.body == answer.body, "a complete answer never changes")
                        #expect(again.headers["cache-control"] == answer.headers["cache-control"])
                        // With an owner (credentials), only the caller's cache may keep it.
                        let owned = try await CatchUpAnswer.fetch(
                            server.baseURL, query: "top", params: ["n": "20"], since: since,
                            headers: [("X-User", "ann")])
                        #expect(owned.body == answer.body)
                        #expect(owned.headers["cache-control"] == "private, max-age=31536000, immutable")
                        sequence = end
                    }
                    #expect(try decoded(held) == fresh, "from \(start): the fresh value")
                }
                #expect(completeAnswers >= 5)
            }
        }
    }

    @Test func anAnswerAtTheServersPositionHasNoStepsAndIsNotStored() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let watcher = try await SyncTestClient.connect(server.baseURL)
                try await watcher.subscribe("top", to: "top")
                let first = try await watcher.next()
                let since = try #require(first.position)
                let answer = try await CatchUpAnswer.fetch(server.baseURL, query: "top", since: since)
                #expect(answer.status == 200)
                #expect(answer.stepCount == 0)
                #expect(answer.complete == false, "no commit after \(since) yet")
                #expect(answer.position == since)
                #expect(answer.headers["cache-control"] == "no-store")
            }
        }
    }

    @Test func aQueryNoOneSubscribesToStartsItsHistoryAtItsFirstFetch() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                // Another query is observed, so that every commit has a position.
                let watcher = try await SyncTestClient.connect(server.baseURL)
                try await watcher.subscribe("count", to: "count")
                let before = try #require(try await watcher.next().position)
                try await addPlayer(server, "carol", 90)
                _ = try await watcher.next()
                // The first catch-up observes the query from now on: an
                // earlier position is one its history never held.
                let old = try await CatchUpAnswer.fetch(server.baseURL, query: "top", params: ["n": "3"], since: before)
                #expect(old.status == 410, "\(before): \(old.body)")
                #expect(old.reason == "positionTooOld")
                #expect(old.headers["cache-control"] == "no-store")
                // The feed lingers: a position from its first fetch on is brought forward.
                let now = try await SyncTestClient.connect(server.baseURL).helloPosition
                #expect(now != before)
                let current = try await CatchUpAnswer.fetch(
                    server.baseURL, query: "top", params: ["n": "3"], since: now)
                #expect(current.status == 200, "\(current.body)")
                #expect(current.stepCount == 0)
            }
        }
    }

    @Test func aPositionTheHistoryNoLongerHoldsIsGone() async throws {
        let configuration = {
            var configuration = testConfiguration()
            configuration.syncHistoryBytes = 1  // the history keeps its last step only
            return configuration
        }()
        try await withTimeout {
            try await HummingbirdServer.with(configuration: configuration) { server in
                let watcher = try await SyncTestClient.connect(server.baseURL)
                try await watcher.subscribe("top", to: "top")
                let first = try await watcher.next()
                for (name, score) in [("carol", 90), ("dave", 95), ("erin", 5)] {
                    try await addPlayer(server, name, score)
                    _ = try await watcher.next()
                }
                let answer = try await CatchUpAnswer.fetch(
                    server.baseURL, query: "top", since: try #require(first.position))
                #expect(answer.status == 410)
                #expect(answer.reason == "positionTooOld")
                #expect(answer.headers["cache-control"] == "no-store")
            }
        }
    }

    @Test func refusalsSayWhatIsWrongAndAreNotStored() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                let position = client.helloPosition
                let sequence = try #require(UInt64(position.split(separator: "/")[1]))
                let cases: [(query: String, since: String?, status: Int, reason: String)] = [
                    ("nope", position, 404, "unknownQuery"),
                    ("top", "not-a-position", 400, "badRequest"),
                    ("top", nil, 400, "badRequest"),
                    ("top", "elsewhere/\(sequence)", 410, "positionTooOld"),
                    ("top", "\(position.split(separator: "/")[0])/\(sequence + 1000)", 410, "positionTooOld"),
                    ("count", position, 410, "positionTooOld"),  // whole values: no keyed changes
                ]
                for (query, since, status, reason) in cases {
                    let answer = try await CatchUpAnswer.fetch(server.baseURL, query: query, since: since)
                    #expect(answer.status == status, "\(query) since \(since ?? "-"): \(answer.body)")
                    #expect(answer.reason == reason, "\(query) since \(since ?? "-")")
                    #expect(answer.headers["cache-control"] == "no-store")
                }
                let badParameter = try await CatchUpAnswer.fetch(
                    server.baseURL, query: "top", params: ["n": "-1"], since: position)
                #expect(badParameter.status == 400)
            }
        }
    }
}
