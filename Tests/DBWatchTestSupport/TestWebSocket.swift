import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging

/// The tests' WebSocket client: text messages out, text or JSON messages
/// in, over a real socket. Belongs to the task of ``connect(_:headers:maxMessageSize:_:)``'s body.
///
/// ```swift
/// try await TestWebSocket.connect("ws://127.0.0.1:\(port)/top/socket") { socket in
///     try await socket.send(#"{"limit":1}"#)
///     let message = try await socket.next(Message.self)
///     try await socket.close()
/// }
/// ```
public final class TestWebSocket {
    /// The connection closed where a message had to come.
    public struct Closed: Error {
        public init() {}
    }

    private var messages: WebSocketInboundMessageStream.AsyncIterator
    private let outbound: WebSocketOutboundWriter

    private init(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, maxMessageSize: Int) {
        messages = inbound.messages(maxSize: maxMessageSize).makeAsyncIterator()
        self.outbound = outbound
    }

    /// Connects to `url` with `headers`, runs `body` with the connection,
    /// and returns once the connection closed (by ``close()`` or by the
    /// server). Messages and frames may be `maxMessageSize` bytes long.
    public static func connect(
        _ url: String, headers: [String: String] = [:], maxMessageSize: Int = 1 << 20,
        _ body: @escaping @Sendable (TestWebSocket) async throws -> Void
    ) async throws {
        var logger = Logger(label: "dbwatch.tests.websocket")
        logger.logLevel = .error
        var configuration = WebSocketClientConfiguration()
        configuration.maxFrameSize = maxMessageSize
        for (name, value) in headers {
            configuration.additionalHeaders[HTTPField.Name(name)!] = value  // a test's own, valid name
        }
        try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) {
            inbound, outbound, _ in
            try await body(TestWebSocket(inbound: inbound, outbound: outbound, maxMessageSize: maxMessageSize))
        }
    }

    /// Sends `text` as a text message.
    public func send(_ text: String) async throws {
        try await outbound.write(.text(text))
    }

    /// The next text message (binary ones are skipped), or nil once the
    /// connection closed.
    public func nextText() async throws -> String? {
        while let message = try await messages.next() {
            if case .text(let text) = message { return text }
        }
        return nil
    }

    /// The next text message decoded as JSON, which must come.
    public func next<Message: Decodable>(_ type: Message.Type) async throws -> Message {
        guard let text = try await nextText() else { throw Closed() }
        return try JSONDecoder().decode(Message.self, from: Data(text.utf8))
    }

    /// Closes the connection normally (close code 1000).
    public func close() async throws {
        try await outbound.close(.normalClosure, reason: nil)
    }
}
