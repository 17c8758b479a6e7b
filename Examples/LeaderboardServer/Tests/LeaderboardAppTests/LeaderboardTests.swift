import Foundation
import LeaderboardApp
import Testing

/// The leaderboard of a new database (`0002_seed_players.sql`).
let seededNames = ["Arthur", "Barbara", "Craig", "Diane"]

@Suite("The leaderboard over HTTP")
struct LeaderboardTests {
    @Test("GET /leaderboard answers the seeded leaderboard as JSON")
    func currentLeaderboardAsJSON() async throws {
        try await withTimeout {
            try await TestServer.with { server in
                let answer = try await server.get("/leaderboard")
                #expect(answer.status == 200)
                #expect(answer.contentType?.hasPrefix("application/json") == true)
                let players = try JSONDecoder().decode([Player].self, from: Data(answer.body.utf8))
                #expect(players.map(\.name) == seededNames)
                #expect(players.map(\.score) == [100, 80, 60, 40])
            }
        }
    }

    @Test("server-sent events: the leaderboard at once, then the new order after a POST")
    func eventsFollowScoreChanges() async throws {
        try await withTimeout {
            try await TestServer.with { server in
                let events = try await EventReader(url: server.baseURL + "/leaderboard/events")
                #expect(events.status == 200)
                #expect(events.contentType == "text/event-stream")
                let first = try await events.next()
                #expect(first.name == "message")
                #expect(try JSONDecoder().decode([Player].self, from: Data(first.data.utf8)).map(\.name) == seededNames)

                let answer = try await server.post("/players/Diane/score", json: #"{"score": 150}"#)
                #expect(answer.status == 200)
                #expect(
                    try JSONDecoder().decode(Player.self, from: Data(answer.body.utf8))
                        == Player(name: "Diane", score: 150))
                let second = try await events.next()
                #expect(
                    try JSONDecoder().decode([Player].self, from: Data(second.data.utf8)).map(\.name)
                        == ["Diane", "Arthur", "Barbara", "Craig"])

                // A new player, whose name needs percent-encoding in the path.
                _ = try await server.post("/players/Zo%C3%A9%20B/score", json: #"{"score": 10}"#)
                let third = try await events.next()
                #expect(
                    try JSONDecoder().decode([Player].self, from: Data(third.data.utf8)).last
                        == Player(name: "Zoé B", score: 10))
            }
        }
    }

    @Test(
        "a POST that is not a score is a 400 with a JSON error, and changes nothing",
        arguments: [#"{"score": "high"}"#, #"{}"#, "not json", ""])
    func badScoreIsRefused(body: String) async throws {
        try await withTimeout {
            try await TestServer.with { server in
                let answer = try await server.post("/players/Arthur/score", json: body)
                #expect(answer.status == 400)
                let error = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
                #expect((error?["message"] as? String)?.isEmpty == false)
                let players = try JSONDecoder().decode(
                    [Player].self, from: Data(try await server.get("/leaderboard").body.utf8))
                #expect(players.first == Player(name: "Arthur", score: 100))
            }
        }
    }

    @Test("a name longer than 40 characters is a 400 with a JSON error")
    func longNameIsRefused() async throws {
        try await withTimeout {
            try await TestServer.with { server in
                let answer = try await server.post(
                    "/players/\(String(repeating: "x", count: 41))/score", json: #"{"score": 1}"#)
                #expect(answer.status == 400)
                #expect(answer.body.contains("1 to 40 characters"))
            }
        }
    }
}

@Suite("Only the leaderboard's own page writes")
struct CrossSiteWriteTests {
    @Test(
        "a write from another site's page, or with a body not declared JSON, is refused and changes nothing",
        arguments: [
            [("Content-Type", "text/plain"), ("Origin", "http://evil.example")],
            [("Content-Type", "text/plain")],
            [("Content-Type", "application/json"), ("Origin", "http://evil.example")],
            [("Content-Type", "application/json"), ("Host", "evil.example")],
        ])
    func crossSiteWriteIsRefused(headers: [(String, String)]) async throws {
        try await withTimeout {
            try await TestServer.with { server in
                let answer = try await server.post("/players/Mallory/score", json: #"{"score": 5}"#, headers: headers)
                #expect([403, 415].contains(answer.status), "\(answer)")
                let error = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
                #expect((error?["message"] as? String)?.isEmpty == false)
                let players = try JSONDecoder().decode(
                    [Player].self, from: Data(try await server.get("/leaderboard").body.utf8))
                #expect(players.map(\.name) == seededNames)
            }
        }
    }

    @Test("a write from the server's own page is accepted")
    func sameOriginWriteIsAccepted() async throws {
        try await withTimeout {
            try await TestServer.with { server in
                let answer = try await server.post(
                    "/players/Mallory/score", json: #"{"score": 5}"#,
                    headers: [("Content-Type", "application/json"), ("Origin", server.baseURL)])
                #expect(answer.status == 200)
            }
        }
    }
}
