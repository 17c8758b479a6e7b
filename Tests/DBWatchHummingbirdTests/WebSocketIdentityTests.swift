import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
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
    /// Connects to `path` as `user` (the `X-User` header), runs `body` with a
    /// way to send a message and to read the next one, then closes.
    private func connect(
        _ server: LiveServer, _ path: String, as user: String,
        _ body:
            @escaping @Sendable (_ send: (String) async throws -> Void, _ next: () async throws -> TodoMessage)
            async throws
            -> Void
    ) async throws {
        try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)\(path)", headers: ["X-User": user]) { socket in
            try await body({ try await socket.send($0) }, { try await socket.next(TodoMessage.self) })
            try await socket.close()
        }
    }
    @Test func aClientCannotNameAnotherOwnerWhenTheRouteBindsIt() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                try await connect(server, "/todos/socket", as: "alice") { send, next in
                    // Connected as alice, asking for bob's: the owner is not the client's to choose.
                    try await send(#"{"owner":"bob","limit":10}"#)
                    let first = try await next()
                    #expect(first.type == "value")
                    #expect(first.value == ["milk", "bread"])
                    try await server.database.write { db in
                        try db.execute(sql: "INSERT INTO todo (owner, title) VALUES ('bob', 'bob''s second secret')")
                        try db.execute(sql: "INSERT INTO todo (owner, title) VALUES ('alice', 'eggs')")
                    }
                    #expect(try await next().value == ["milk", "bread", "eggs"])
                    // What does not decode says what is wrong.
                    try await send(#"{"limit":"many"}"#)
                    let error = try await next()
                    #expect(error.type == "error")
                    #expect(error.error?.message == "invalid request parameters: limit has the wrong type")
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
                try await connect(server, "/todos/checked/socket", as: "alice") { send, next in
                    try await send(#"{"owner":"bob"}"#)
                    let refused = try await next()
                    #expect(refused.type == "error")
                    #expect(refused.error?.message == "these are not your todos")
                    #expect(refused.value == nil)
                    #expect(server.live.statistics.fetches == 0)
                    #expect(server.live.statistics.observations == 0)
                    // The connection stays open: the client's own todos are served.
                    try await send(#"{"owner":"alice","limit":1}"#)
                    #expect(try await next().value == ["milk"])
                    // A refusal leaves the current subscription going on.
                    try await send(#"{"owner":"bob","limit":5}"#)
                    #expect(try await next().error?.message == "these are not your todos")
                    try await server.database.write { db in
                        try db.execute(sql: "UPDATE todo SET title = 'oat milk' WHERE title = 'milk'")
                    }
                    #expect(try await next().value == ["oat milk"])
                }
                try await waitUntil {
                    server.live.statistics.clientsConnected == 0 && server.live.statistics.observations == 0
                }
            }
        }
    }
}
