#if Vapor
    import DBWatch
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    import DBWatchVapor
    import Foundation
    import HTTPTypes
    import HummingbirdWSClient
    import Logging
    import Testing

    /// A message from the server.
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

    @Suite("Vapor: WebSocket")
    struct WebSocketTests {
        /// Connects to `path` (as `user`, the `X-User` header, when given),
        /// runs `body` with a way to send a message and to read the next one,
        /// then closes.
        private func connect<Message: Decodable & Sendable>(
            _ server: LiveServer, _ path: String, as user: String? = nil, reading: Message.Type,
            _ body:
                @escaping @Sendable (_ send: (String) async throws -> Void, _ next: () async throws -> Message)
                async throws -> Void
        ) async throws {
            var logger = Logger(label: "ws-client")
            logger.logLevel = .error
            var configuration = WebSocketClientConfiguration()
            if let user { configuration.additionalHeaders = [HTTPField.Name("X-User")!: user] }
            try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(server.port)\(path)", configuration: configuration, logger: logger
            ) { inbound, outbound, _ in
                var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                func next() async throws -> Message {
                    guard case .text(let text) = try await messages.next() else {
                        throw EventStream.EndOfStream()
                    }
                    return try JSONDecoder().decode(Message.self, from: Data(text.utf8))
                }
                try await body({ try await outbound.write(.text($0)) }, next)
                try await outbound.close(.normalClosure, reason: nil)
            }
        }

        @Test func requestChangesOnTheSameConnection() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    let database = server.database
                    try await connect(server, "/top/socket", reading: SocketMessage.self) { send, next in
                        try await send(#"{"limit":1}"#)
                        let first = try await next()
                        #expect(first.type == "value")
                        #expect(first.id != nil)
                        #expect(first.value == [Player(name: "arthur", score: 100)])

                        // New parameters, same connection.
                        try await send(#"{"limit":3}"#)
                        #expect(try await next().value?.map(\.name) == ["arthur", "barbara"])

                        try await database.write { db in
                            try db.execute(sql: "INSERT INTO player VALUES ('carol', 90)")
                        }
                        #expect(try await next().value?.map(\.name) == ["arthur", "carol", "barbara"])

                        // Parameters that do not decode: an error, the connection stays.
                        try await send(#"{"limit":"many"}"#)
                        let error = try await next()
                        #expect(error.type == "error")
                        #expect(error.error?.message == "invalid request parameters: limit has the wrong type")
                        try await send(#"{"limit":1}"#)
                        #expect(try await next().value?.map(\.name) == ["arthur"])
                    }
                    try await waitUntil {
                        server.live.statistics.clientsConnected == 0 && server.database.observationCount == 0
                            && server.database.subscriberCount == 0
                    }
                }
            }
        }

        @Test func aClientCannotNameAnotherOwnerWhenTheRouteBindsIt() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    try await connect(server, "/todos/socket", as: "alice", reading: TodoMessage.self) { send, next in
                        // Connected as alice, asking for bob's: the owner is not the client's to choose.
                        try await send(#"{"owner":"bob","limit":10}"#)
                        #expect(try await next().value == ["milk", "bread"])
                    }
                }
            }
        }

        @Test func aRefusalOfTheRouteIsAnErrorMessageAndTheConnectionGoesOn() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    try await connect(server, "/todos/checked/socket", as: "alice", reading: TodoMessage.self) {
                        send, next in
                        try await send(#"{"owner":"alice"}"#)
                        #expect(try await next().value == ["milk", "bread"])
                        try await send(#"{"owner":"bob"}"#)
                        let refused = try await next()
                        #expect(refused.type == "error")
                        #expect(refused.error == ErrorJSON(message: "these are not your todos"))
                        // Alice's subscription goes on.
                        try await server.database.write { db in
                            try db.execute(sql: "INSERT INTO todo (owner, title) VALUES ('alice', 'eggs')")
                        }
                        #expect(try await next().value == ["milk", "bread", "eggs"])
                    }
                }
            }
        }

        @Test(arguments: [("/top/small/socket", 100), ("/top/socket", 20_000)])
        func aMessageTooLargeEndsTheConnectionUnserved(path: String, size: Int) async throws {
            // Past the route's maxMessageSize (64 bytes), or past Vapor's
            // 16 KiB frame size (the default maxMessageSize is 64 KiB).
            try await withTimeout {
                try await LiveServer.with { server in
                    var logger = Logger(label: "ws-client")
                    logger.logLevel = .error
                    let received = Protected<[String]>([])
                    let close = try await WebSocketClient.connect(
                        url: "ws://127.0.0.1:\(server.port)\(path)", logger: logger
                    ) { inbound, outbound, _ in
                        let padding = String(repeating: " ", count: size)
                        try await outbound.write(.text(#"{"limit":1}"# + padding))
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            if case .text(let text) = message { received.withLock { $0.append(text) } }
                        }
                    }
                    #expect(close?.closeCode == .messageTooLarge)
                    #expect(received.withLock { $0 } == [])
                    try await waitUntil {
                        server.live.statistics.clientsConnected == 0 && server.live.statistics.observations == 0
                    }
                }
            }
        }

        @Test func shutdownEndsTheConnectionWithAFinalMessagePromptly() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    var logger = Logger(label: "ws-client")
                    logger.logLevel = .error
                    let (subscribed, subscribedContinuation) = AsyncStream.makeStream(of: Void.self)
                    let received = Protected<[String]>([])
                    async let client = WebSocketClient.connect(
                        url: "ws://127.0.0.1:\(server.port)/top/socket", logger: logger
                    ) { inbound, outbound, _ in
                        var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                        try await outbound.write(.text(#"{"limit":1}"#))
                        _ = try await messages.next()
                        subscribedContinuation.yield()
                        while let message = try await messages.next() {
                            guard case .text(let text) = message else { continue }
                            let final = try JSONDecoder().decode(SocketMessage.self, from: Data(text.utf8))
                            received.withLock { $0.append(final.type) }
                            #expect(final.reason == "shutdown")
                        }
                    }
                    var iterator = subscribed.makeAsyncIterator()
                    await iterator.next()
                    let start = ContinuousClock.now
                    try await server.shutDown()
                    #expect(ContinuousClock.now - start < .seconds(8))  // below Vapor's own 10 s wait
                    // The final message, then the close: the adapter closes after writing it.
                    _ = try await client
                    #expect(received.withLock { $0 } == ["end"])
                    #expect(server.live.statistics.clientsConnected == 0)
                }
            }
        }
    }
#endif
