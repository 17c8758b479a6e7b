import DBWatch
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import HummingbirdWSClient
import Logging
import Testing

/// A message from the server on `/top/socket`.
private struct SocketMessage: Decodable, Sendable {
    var type: String
    var id: String?
    var value: [Player]?
    var error: ErrorJSON?
    var reason: String?
}

/// A message of the per-user routes.
private struct TodoMessage: Decodable, Sendable {
    var type: String
    var value: [String]?
    var error: ErrorJSON?
}

/// WebSockets as every adapter serves them: values (with an `id`) and
/// errors as JSON messages, new parameters on the same connection, a
/// request bound or refused by the route, a message too large, shutdown.
@Suite("WebSocket, on every adapter")
struct WebSocketTests {
    /// Connects to `path` as `user` (the `X-User` header), runs `body` with a
    /// way to send a message and to read the next one, then closes.
    private func connect(
        _ server: any AdapterServer, _ path: String, as user: String,
        _ body:
            @escaping @Sendable (_ send: (String) async throws -> Void, _ next: () async throws -> TodoMessage)
            async throws -> Void
    ) async throws {
        try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)\(path)", headers: ["X-User": user]) { socket in
            try await body({ try await socket.send($0) }, { try await socket.next(TodoMessage.self) })
            try await socket.close()
        }
    }

    /// Values come as `{"type":"value","id","value"}`; new parameters on the
    /// same connection replace the request; parameters that do not decode
    /// are an error message and the connection goes on; once the client
    /// closes, its subscription is released.
    @Test(arguments: Adapter.available)
    func requestChangesOnTheSameConnection(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let database = server.database
                try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)/top/socket") { socket in
                    func next() async throws -> SocketMessage { try await socket.next(SocketMessage.self) }
                    try await socket.send(#"{"limit":1}"#)
                    let first = try await next()
                    #expect(first.type == "value")
                    #expect(first.id != nil)
                    #expect(first.value == [Player(name: "arthur", score: 100)])

                    // New parameters, same connection.
                    try await socket.send(#"{"limit":3}"#)
                    let second = try await next()
                    #expect(second.value?.map(\.name) == ["arthur", "barbara"])

                    try await database.write { db in try db.execute(sql: "INSERT INTO player VALUES ('carol', 90)") }
                    let third = try await next()
                    #expect(third.value?.map(\.name) == ["arthur", "carol", "barbara"])
                    #expect(third.id != nil)
                    #expect(third.id != second.id)

                    // Parameters that do not decode: an error, the connection stays.
                    try await socket.send(#"{"limit":"many"}"#)
                    let error = try await next()
                    #expect(error.type == "error")
                    #expect(error.error?.message == "invalid request parameters: limit has the wrong type")
                    #expect(error.value == nil)
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

    /// A route that builds the request with the client's identity serves
    /// that identity's rows whatever the client names, and only theirs.
    @Test(arguments: Adapter.available)
    func aClientCannotNameAnotherOwnerWhenTheRouteBindsIt(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
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

    /// A request the route refuses is an error message in the one JSON
    /// shape that fetches nothing; the connection stays open and a refusal
    /// leaves the current subscription going on.
    @Test(arguments: Adapter.available)
    func aRefusedRequestReachesTheClientAndFetchesNothing(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                try await connect(server, "/todos/checked/socket", as: "alice") { send, next in
                    try await send(#"{"owner":"bob"}"#)
                    let refused = try await next()
                    #expect(refused.type == "error")
                    #expect(refused.error == ErrorJSON(message: "these are not your todos"))
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

    /// A client's message larger than the server accepts (64 KiB and more
    /// in one frame: past the default `maxMessageSize:` and past the
    /// frameworks' 16 KiB frames) ends the connection with close code 1009
    /// and is not served.
    @Test(arguments: Adapter.available)
    func aMessageLargerThanTheMaximumEndsTheConnectionUnserved(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                var logger = Logger(label: "ws-client")
                logger.logLevel = .error
                let more = Protected<[String]>([])
                let close = try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(server.port)/top/socket", logger: logger
                ) { inbound, outbound, _ in
                    var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                    try await outbound.write(.text(#"{"limit":1}"#))
                    guard case .text(let text) = try await messages.next() else { throw TestWebSocket.Closed() }
                    #expect(try JSONDecoder().decode(SocketMessage.self, from: Data(text.utf8)).type == "value")
                    let padding = String(repeating: "x", count: 1 << 16)
                    try await outbound.write(.text(#"{"limit":2,"padding":"\#(padding)"}"#))
                    // Nothing more is served: the server closes the connection.
                    while let message = try await messages.next() {
                        if case .text(let text) = message { more.withLock { $0.append(text) } }
                    }
                }
                #expect(close?.closeCode == .messageTooLarge)
                #expect(more.withLock { $0 } == [])
                try await waitUntil {
                    server.live.statistics.clientsConnected == 0 && server.live.statistics.observations == 0
                }
            }
        }
    }

    /// Graceful shutdown ends a subscribed connection promptly; what comes
    /// before the close is at most the final `{"type":"end","reason":"shutdown"}`
    /// (Vapor's adapter writes it before closing; Hummingbird closes the
    /// connection at the same time as the message is written).
    @Test(arguments: Adapter.available)
    func shutdownEndsTheConnectionPromptly(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let subscribed = Gate()
                let received = Protected<[String]>([])
                async let client: Void = TestWebSocket.connect("ws://127.0.0.1:\(server.port)/top/socket") { socket in
                    try await socket.send(#"{"limit":1}"#)
                    _ = try await socket.nextText()
                    subscribed.open()
                    while let text = try await socket.nextText() {
                        let final = try JSONDecoder().decode(SocketMessage.self, from: Data(text.utf8))
                        received.withLock { $0.append(final.type) }
                        #expect(final.reason == "shutdown")
                    }
                }
                await subscribed.wait()
                let start = ContinuousClock.now
                try await server.shutDown()
                let elapsed = ContinuousClock.now - start
                #expect(elapsed < adapter.promptShutdownLimit, "shutdown took \(elapsed)")
                _ = try await client
                let messages = received.withLock { $0 }
                #expect(messages.allSatisfy { $0 == "end" } && messages.count <= 1, "\(messages)")
                #if Vapor
                    if adapter == .vapor { #expect(messages == ["end"]) }
                #endif
                #expect(server.live.statistics.clientsConnected == 0)
            }
        }
    }
}
