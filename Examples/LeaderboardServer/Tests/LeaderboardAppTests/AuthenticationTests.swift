import Foundation
import LeaderboardApp
import Testing

@Suite("The protected route /me/events")
struct AuthenticationTests {
    @Test("without a known bearer token, /me/events is a 401 with a Bearer challenge")
    func withoutATokenIsA401() async throws {
        try await withTimeout {
            try await TestServer.with(tokens: ["diane-token": Viewer(name: "Diane")]) { server in
                for headers in [[], [("Authorization", "Bearer nope")], [("Authorization", "Basic ZGlhbmU6eA==")]] {
                    let events = try await EventReader(url: server.baseURL + "/me/events", headers: headers)
                    #expect(events.status == 401)
                }
            }
        }
    }

    @Test("a bearer token streams its own player's line, which follows that player's score")
    func aTokenStreamsItsPlayersLine() async throws {
        try await withTimeout {
            try await TestServer.with(tokens: ["diane-token": Viewer(name: "Diane")]) { server in
                let events = try await EventReader(
                    url: server.baseURL + "/me/events", headers: [("Authorization", "Bearer diane-token")])
                #expect(events.status == 200)
                let first = try JSONDecoder().decode(RankedPlayer.self, from: Data(try await events.next().data.utf8))
                #expect(first == RankedPlayer(name: "Diane", score: 40, rank: 4))
                _ = try await server.post("/players/Diane/score", json: #"{"score": 150}"#)
                let second = try JSONDecoder().decode(RankedPlayer.self, from: Data(try await events.next().data.utf8))
                #expect(second == RankedPlayer(name: "Diane", score: 150, rank: 1))
            }
        }
    }
}
