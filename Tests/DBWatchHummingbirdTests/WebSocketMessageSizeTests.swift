import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// What the catalog's "Serving Live Queries" article says of a client's
/// message larger than the server accepts (here 64 KiB and more, in one
/// frame: past `maxMessageSize:`'s default and Hummingbird's 16 KiB
/// `maxFrameSize`): it ends the connection, and is not served.
@Suite("WebSocket messages larger than the server accepts")
struct WebSocketMessageSizeTests {
    @Test func aMessageLargerThanTheMaximumEndsTheConnection() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)/top/socket") { socket in
                    try await socket.send(#"{"limit":1}"#)
                    #expect(try await socket.next(SocketMessage.self).type == "value")
                    let padding = String(repeating: "x", count: 1 << 16)
                    try await socket.send(#"{"limit":2,"padding":"\#(padding)"}"#)
                    // Nothing more arrives: the server closes the connection.
                    var more: [String] = []
                    do {
                        while let text = try await socket.nextText() { more.append(text) }
                    } catch {}
                    #expect(more.allSatisfy { !$0.contains(#""type":"value""#) }, "\(more)")
                }
                try await waitUntil { server.live.statistics.clientsConnected == 0 }
            }
        }
    }
}
