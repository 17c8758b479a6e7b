import DBWatch
import DBWatchDelivery
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
    /// // server: {"type":"value","id":"7-9f1c…","value":[…]}
    /// // client: {"limit": 10}   (a new request, the same connection)
    /// ```
    ///
    /// Messages from the server, one JSON object each: `{"type":"value",
    /// "id", "value"}` (`id` as a server-sent event's), `{"type":"error","error":{"message","code"}}`
    /// (a failing fetch, parameters that do not decode, or a request that
    /// would start more than `LiveQueriesConfiguration.maxObservations`
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
        try await webSocket(
            receiving: R.self, inbound: inbound, outbound: outbound, context: context, scope: scope,
            maxMessageSize: maxMessageSize, request: { $0 })
    }

    /// Serves live values on a WebSocket whose client sends messages of
    /// type `Message`, from which `request` builds (or checks) the observed
    /// request with what the route knows of the client: its user, its
    /// rights. Nothing is fetched before `request` returns; what it throws
    /// reaches the client as an error message and the connection stays
    /// open, the previous subscription going on.
    ///
    /// The route binds the request to the authenticated user, so a client
    /// cannot ask for another user's rows whatever it sends:
    ///
    /// ```swift
    /// struct TodoFilter: Decodable, Sendable { var done: Bool? }
    ///
    /// router.ws("todos/socket") { inbound, outbound, context in
    ///     let user = try context.requestContext.requireIdentity()   // the route's authentication
    ///     try await live.webSocket(
    ///         receiving: TodoFilter.self, inbound: inbound, outbound: outbound, context: context,
    ///         scope: user.id
    ///     ) { filter in
    ///         Todos(owner: user.id, done: filter.done)            // the owner is never the client's
    ///     }
    /// }
    /// ```
    ///
    /// Or it checks a request the client sends whole, refusing with a
    /// message the client receives (`{"type":"error","error":{"message"}}`):
    ///
    /// ```swift
    /// try await live.webSocket(receiving: Todos.self, inbound: inbound, outbound: outbound, context: context,
    ///                          scope: user.id) { todos in
    ///     guard todos.owner == user.id else { throw LiveQueriesError.forbidden("these are not your todos") }
    ///     return todos
    /// }
    /// ```
    ///
    /// A message that does not decode is an error message naming what is
    /// wrong (`invalid request parameters: …`); a `LiveQueriesError` thrown
    /// by `Message`'s own decoding or by `request` reaches the client with
    /// its message; any other error as `the request was refused`, logged at
    /// debug level with the error.
    ///
    /// - Parameters:
    ///   - messageType: what the client sends, decoded from each text or binary message.
    ///   - inbound: the client's messages.
    ///   - outbound: where values go.
    ///   - context: the WebSocket context, whose logger is used.
    ///   - scope: what clients must also share to share one observation.
    ///     It only separates sharing: it authorizes nothing, `request` does.
    ///   - maxMessageSize: the largest message accepted.
    ///   - request: the observed request for a message, built or checked
    ///     with the route's identity; throws to refuse it.
    public func webSocket<Message: Decodable & Sendable, R: Queryable>(
        receiving messageType: Message.Type,
        inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter,
        context: some WebSocketContext,
        scope: (any Hashable & Sendable)? = nil,
        maxMessageSize: Int = 1 << 16,
        request: @escaping @Sendable (Message) async throws -> R
    ) async throws where R.Value: Encodable {
        let session = webSocketSession(
            receiving: Message.self, scope: scope, logger: context.logger, encode: Self.encodeJSON, request: request)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { session.clientLeft() }
                for try await message in inbound.messages(maxSize: maxMessageSize) {
                    switch message {
                    case .text(let text): await session.receive(Data(text.utf8))
                    case .binary(let buffer): await session.receive(Data(buffer.readableBytesView))
                    }
                }
            }
            // Graceful shutdown: one task of the LiveQueries ends every
            // connection with its final message (see `events`).
            watchServerShutdown()
            try await session.run { frame in
                try await outbound.withTextMessageWriter { write in try await write(frame.byteBuffer(.webSocket)) }
            }
            group.cancelAll()
        }
    }
}
