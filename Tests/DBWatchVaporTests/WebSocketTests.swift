#if Vapor
    import DBWatch
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    import DBWatchVapor
    import Foundation
    import HummingbirdWSClient
    import Logging
    import Testing

    /// The size of the messages Vapor's adapter accepts (what every adapter
    /// does on a WebSocket is `DBWatchAdapterTests.WebSocketTests`).
    @Suite("Vapor: WebSocket message sizes")
    struct WebSocketTests {
        /// A first message past the route's `maxMessageSize:` (64 bytes),
        /// or past Vapor's 16 KiB frame size (the default `maxMessageSize:`
        /// is 64 KiB), ends the connection with close code 1009 and is not
        /// served.
        @Test(arguments: [("/top/small/socket", 100), ("/top/socket", 20_000)])
        func aMessageTooLargeEndsTheConnectionUnserved(path: String, size: Int) async throws {
            try await withTimeout {
                try await VaporServer.with { server in
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
    }
#endif
