import DBWatch
import DBWatchHummingbird
import DBWatchTestSupport
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import Testing

/// A message of the per-user WebSocket routes.
private struct TodoMessage: Decodable {
    var type: String
    var value: [String]?
    var error: ErrorJSON?
}

/// The WebSocket request hook: a route builds or checks what a client asks
/// for with the identity it authenticated, so a client connected as one
/// user never reads another's rows, and a refusal reaches the client.
@Suite("WebSocket requests bound to the route's identity")
struct WebSocketIdentityTests {
    @Test func aClientCannotNameAnotherOwnerWhenTheRouteBindsIt() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                var logger = Logger(label: "ws-client")
                logger.logLevel = .error
                var configuration = WebSocketClientConfiguration()
                configuration.additionalHeaders = [HTTPField.Name("X-User")!: "alice"]
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(server.port)/todos/socket", configuration: configuration, logger: logger
                ) { inbound, outbound, _ in
                    var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                    func next() async throws -> TodoMessage {
                        guard case .text(let text) = try await messages.next() else { throw EventStream.EndOfStream() }
                        return try JSONDecoder().decode(TodoMessage.self, from: Data(text.utf8))
                    }
                    // Connected as alice, asking for bob's: the owner is not the client's to choose.
                    try await outbound.write(.text(#"{"owner":"bob","limit":10}"#))
                    let first = try await next()
                    #expect(first.type == "value")
                    #expect(first.value == ["milk", "bread"])
                    try await server.database.write { db in
                        try db.execute(sql: "INSERT INTO todo (owner, title) VALUES ('bob', 'bob''s second secret')")
                        try db.execute(sql: "INSERT INTO todo (owner, title) VALUES ('alice', 'eggs')")
                    }
                    #expect(try await next().value == ["milk", "bread", "eggs"])
                    // What does not decode says what is wrong.
                    try await outbound.write(.text(#"{"limit":"many"}"#))
                    let error = try await next()
                    #expect(error.type == "error")
                    #expect(error.error?.message == "invalid request parameters: limit has the wrong type")
                    try await outbound.close(.normalClosure, reason: nil)
                }
                try await waitUntil {
                    server.live.statistics.clientsConnected == 0 && server.live.statistics.observations == 0
                }
            }
        }
    }

    @Test func aRefusedRequestReachesTheClientAndFetchesNothing() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                var logger = Logger(label: "ws-client")
                logger.logLevel = .error
                var configuration = WebSocketClientConfiguration()
                configuration.additionalHeaders = [HTTPField.Name("X-User")!: "alice"]
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(server.port)/todos/checked/socket", configuration: configuration,
                    logger: logger
                ) { inbound, outbound, _ in
                    var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                    func next() async throws -> TodoMessage {
                        guard case .text(let text) = try await messages.next() else { throw EventStream.EndOfStream() }
                        return try JSONDecoder().decode(TodoMessage.self, from: Data(text.utf8))
                    }
                    try await outbound.write(.text(#"{"owner":"bob"}"#))
                    let refused = try await next()
                    #expect(refused.type == "error")
                    #expect(refused.error?.message == "these are not your todos")
                    #expect(refused.value == nil)
                    #expect(server.live.statistics.fetches == 0)
                    #expect(server.live.statistics.observations == 0)
                    // The connection stays open: the client's own todos are served.
                    try await outbound.write(.text(#"{"owner":"alice","limit":1}"#))
                    #expect(try await next().value == ["milk"])
                    // A refusal leaves the current subscription going on.
                    try await outbound.write(.text(#"{"owner":"bob","limit":5}"#))
                    #expect(try await next().error?.message == "these are not your todos")
                    try await server.database.write { db in
                        try db.execute(sql: "UPDATE todo SET title = 'oat milk' WHERE title = 'milk'")
                    }
                    #expect(try await next().value == ["oat milk"])
                    try await outbound.close(.normalClosure, reason: nil)
                }
                try await waitUntil {
                    server.live.statistics.clientsConnected == 0 && server.live.statistics.observations == 0
                }
            }
        }
    }
}
