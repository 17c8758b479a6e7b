import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// A message from the server.
struct SocketMessage: Decodable {
    var type: String
    var version: String?
    var value: [Player]?
    var error: ErrorJSON?
    var reason: String?
}

@Suite("WebSocket")
struct WebSocketTests {
    @Test func requestChangesOnTheSameConnection() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let database = server.database
                try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)/top/socket") { socket in
                    func next() async throws -> SocketMessage { try await socket.next(SocketMessage.self) }
                    try await socket.send(#"{"limit":1}"#)
                    let first = try await next()
                    #expect(first.type == "value")
                    #expect(first.value == [Player(name: "arthur", score: 100)])

                    // New parameters, same connection.
                    try await socket.send(#"{"limit":3}"#)
                    let second = try await next()
                    #expect(second.value?.map(\.name) == ["arthur", "barbara"])

                    try await database.write { db in try db.execute(sql: "INSERT INTO player VALUES ('carol', 90)") }
                    let third = try await next()
                    #expect(third.value?.map(\.name) == ["arthur", "carol", "barbara"])

                    // Parameters that do not decode: an error, the connection stays.
                    try await socket.send(#"{"limit":"many"}"#)
                    let error = try await next()
                    #expect(error.type == "error")
                    #expect(error.error?.message == "invalid request parameters: limit has the wrong type")
                    try await socket.send(#"{"limit":1}"#)
                    #expect(try await next().value?.map(\.name) == ["arthur"])
                    try await socket.close()
                }
                try await waitUntil {
                    server.live.statistics.clientsConnected == 0 && server.database.observationCount == 0
                        && server.database.subscriberCount == 0
                }
            }
        }
    }

    @Test func shutdownClosesTheSocketPromptly() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let (subscribed, subscribedContinuation) = AsyncStream.makeStream(of: Void.self)
                async let client: Void = TestWebSocket.connect("ws://127.0.0.1:\(server.port)/top/socket") { socket in
                    try await socket.send(#"{"limit":1}"#)
                    _ = try await socket.nextText()
                    subscribedContinuation.yield()
                    // Hummingbird's WebSocket handler closes the connection on
                    // graceful shutdown (close code 1000) at the same time as
                    // the final message is written: the message may not come first.
                    while let text = try await socket.nextText() {
                        let final = try JSONDecoder().decode(SocketMessage.self, from: Data(text.utf8))
                        #expect(final.type == "end")
                        #expect(final.reason == "shutdown")
                    }
                }
                var iterator = subscribed.makeAsyncIterator()
                await iterator.next()
                let start = ContinuousClock.now
                try await server.shutDown()
                #expect(ContinuousClock.now - start < .seconds(10))  // far below the 30 s timeouts
                _ = try await client
                #expect(server.live.statistics.clientsConnected == 0)
            }
        }
    }
}
