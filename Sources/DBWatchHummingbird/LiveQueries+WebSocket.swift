import DBWatch
import Foundation
import HummingbirdWebSocket
import Logging
import ServiceLifecycle

extension LiveQueries {
    /// Serves live values of `R` on a WebSocket: the client sends the
    /// request's parameters as JSON (`R` is `Decodable`), and may send new
    /// ones on the same connection; the server pushes values and errors.
    ///
    /// ```swift
    /// router.ws("leaderboard/socket") { inbound, outbound, context in
    ///     try await live.webSocket(TopPlayers.self, inbound: inbound, outbound: outbound, context: context)
    /// }
    /// // client: {"limit": 3}
    /// // server: {"type":"value","version":"7-9f1c…","value":[…]}
    /// // client: {"limit": 10}   (a new request, the same connection)
    /// ```
    ///
    /// Messages from the server, one JSON object each: `{"type":"value",
    /// "version", "value"}`, `{"type":"error","error":{"message","code"}}`
    /// (a failing fetch, parameters that do not decode, or a request that
    /// would start more than ``LiveQueriesConfiguration/maxObservations``
    /// shared observations: the connection and its current subscription stay
    /// open), and `{"type":"end","reason"}` before the server closes
    /// the connection (shutdown, closed database).
    ///
    /// - Parameters:
    ///   - requestType: the request type, decoded from each text or binary message.
    ///   - inbound: the client's messages.
    ///   - outbound: where values go.
    ///   - context: the WebSocket context, whose logger is used.
    ///   - scope: what clients must also share to share one observation.
    ///   - maxMessageSize: the largest request message accepted.
    public func webSocket<R: Queryable & Decodable>(
        _ requestType: R.Type,
        inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter,
        context: some WebSocketContext,
        scope: (any Hashable & Sendable)? = nil,
        maxMessageSize: Int = 1 << 16
    ) async throws where R.Value: Encodable {
        let logger = context.logger
        let client = ClientMailbox(skipDigest: nil, keepsAlive: false)
        guard register(client) else {
            try await outbound.withTextMessageWriter { write in
                try await write(Frame.end(reason: "shutdown").webSocketMessage)
            }
            return
        }
        defer { unregister(client) }
        let subscription = SubscriptionSlot()
        defer {
            if let observation = subscription.observation.withLock({ $0 }) { unsubscribe(client, from: observation) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                defer { client.finish(.disconnected) }
                for try await message in inbound.messages(maxSize: maxMessageSize) {
                    let data: Data
                    switch message {
                    case .text(let text): data = Data(text.utf8)
                    case .binary(let buffer): data = Data(buffer.readableBytesView)
                    }
                    let request: R
                    do {
                        request = try JSONDecoder().decode(R.self, from: data)
                    } catch {
                        logger.debug("Live query WebSocket request does not decode", metadata: ["error": "\(error)"])
                        client.offerDirect(.error(ErrorBody(message: "invalid request parameters", code: nil)))
                        continue
                    }
                    let observation: SharedObservation
                    do {
                        observation = try subscribe(
                            client, to: request, scope: scope, logger: logger,
                            replacing: subscription.observation.withLock { $0 }, encode: Self.encodeJSON)
                    } catch {
                        // Past the cap: an error message; the connection and its
                        // current subscription, if any, go on.
                        logger.debug("Live query WebSocket request refused", metadata: ["request": "\(request)"])
                        client.offerDirect(.error(ErrorBody(error)))
                        continue
                    }
                    let previous = subscription.observation.withLock { current in
                        defer { current = observation }
                        return current
                    }
                    if let previous, previous !== observation { unsubscribe(client, from: previous) }
                    logger.debug("Live query WebSocket request", metadata: ["request": "\(request)"])
                }
            }
            do {
                try await withGracefulShutdownHandler {
                    try await client.run(
                        keepAlive: nil, bytes: \.webSocketMessage, counters: counters,
                        write: { buffer in
                            try await outbound.withTextMessageWriter { write in try await write(buffer) }
                        })
                } onGracefulShutdown: {
                    client.finish(.shutdown)
                }
            } catch  where client.finishReason == .disconnected {
                // The client closed the connection: not an error of the handler.
            }
            group.cancelAll()
        }
    }
}

/// The shared observation a WebSocket client is subscribed to now.
final class SubscriptionSlot: Sendable {
    let observation = Locked<SharedObservation?>(nil)
}
