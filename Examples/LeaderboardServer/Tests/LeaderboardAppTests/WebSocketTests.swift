import Foundation
import HummingbirdWSClient
import LeaderboardApp
import Logging
import Testing

@Suite("The leaderboard on a WebSocket")
struct WebSocketTests {
    /// A message of the server: a value, an error or the end.
    struct Message: Decodable {
        var type: String
        var value: [Player]?
    }

    @Test("the leaderboard for the limit sent, then the new order after a POST")
    func socketFollowsScoreChanges() async throws {
        try await withTimeout {
            try await TestServer.with { server in
                var logger = Logger(label: "LeaderboardAppTests")
                logger.logLevel = .error
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(server.port)/leaderboard/socket", logger: logger
                ) {
                    inbound, outbound, _ in
                    var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                    func next() async throws -> Message {
                        guard case .text(let text) = try await messages.next() else { throw EventReader.EndOfStream() }
                        return try JSONDecoder().decode(Message.self, from: Data(text.utf8))
                    }
                    try await outbound.write(.text(#"{"limit": 2}"#))
                    let first = try await next()
                    #expect(first.type == "value")
                    #expect(first.value?.map(\.name) == ["Arthur", "Barbara"])

                    _ = try await server.post("/players/Craig/score", json: #"{"score": 90}"#)
                    #expect(try await next().value?.map(\.name) == ["Arthur", "Craig"])
                }
            }
        }
    }
}
