#if Vapor
    import DBWatch
    import Foundation
    import Vapor

    extension LiveQueries {
        /// Serves live values of `R` on a WebSocket: the client sends the
        /// request's parameters as JSON (`R` is `Decodable`), and may send new
        /// ones on the same connection; the server pushes values and errors.
        ///
        /// ```swift
        /// app.webSocket("leaderboard", "socket") { request, webSocket in
        ///     live.webSocket(TopPlayers.self, for: request, webSocket: webSocket)
        /// }
        /// // client: {"limit": 3}
        /// // server: {"type":"value","id":"7-9f1c…","value":[…]}
        /// // client: {"limit": 10}   (a new request, the same connection)
        /// ```
        ///
        /// Messages from the server, one JSON text message each:
        /// `{"type":"value", "id", "value"}`, `{"type":"error","error":{"message","code"}}`
        /// (a failing fetch, parameters that do not decode, or a request that
        /// would start more than ``LiveQueriesConfiguration/maxObservations``
        /// shared observations: the connection and its current subscription
        /// stay open), and `{"type":"end","reason"}` before the server closes
        /// the connection (shutdown, closed database).
        ///
        /// Call it in Vapor's synchronous `onUpgrade` closure, as above (not
        /// in an `async` one): there, on the connection's event loop, it
        /// listens before the client's first message can arrive. It returns
        /// at once; a task serves the connection until it closes.
        ///
        /// - Parameters:
        ///   - requestType: the request type, decoded from each text or binary message.
        ///   - httpRequest: the upgraded HTTP request, whose logger is used.
        ///   - webSocket: the connection.
        ///   - scope: what clients must also share to share one observation.
        ///   - maxMessageSize: the largest request message accepted; a larger
        ///     one closes the connection (code 1009).
        public func webSocket<R: Queryable & Decodable>(
            _ requestType: R.Type,
            for httpRequest: Request,
            webSocket: WebSocket,
            scope: (any Hashable & Sendable)? = nil,
            maxMessageSize: Int = 1 << 16
        ) where R.Value: Encodable {
            self.webSocket(
                receiving: R.self, for: httpRequest, webSocket: webSocket, scope: scope,
                maxMessageSize: maxMessageSize, request: { $0 })
        }

        /// Serves live values on a WebSocket whose client sends messages of
        /// type `Message`, from which `request` builds (or checks) the
        /// observed request with what the route knows of the client: its
        /// user, its rights. Nothing is fetched before `request` returns;
        /// what it throws reaches the client as an error message and the
        /// connection stays open, the previous subscription going on.
        ///
        /// The route binds the request to the authenticated user, so a client
        /// cannot ask for another user's rows whatever it sends:
        ///
        /// ```swift
        /// struct TodoFilter: Decodable, Sendable { var done: Bool? }
        ///
        /// app.grouped(UserAuthenticator(), User.guardMiddleware()).webSocket("todos", "socket") { request, webSocket in
        ///     let user = request.auth.get(User.self)!   // the guard middleware let it through
        ///     live.webSocket(receiving: TodoFilter.self, for: request, webSocket: webSocket, scope: user.id) {
        ///         filter in Todos(owner: user.id, done: filter.done)   // the owner is never the client's
        ///     }
        /// }
        /// ```
        ///
        /// Or it checks a request the client sends whole, refusing with a
        /// message the client receives (`{"type":"error","error":{"message"}}`):
        ///
        /// ```swift
        /// live.webSocket(receiving: Todos.self, for: request, webSocket: webSocket, scope: user.id) { todos in
        ///     guard todos.owner == user.id else { throw LiveQueriesError.forbidden("these are not your todos") }
        ///     return todos
        /// }
        /// ```
        ///
        /// A message that does not decode is an error message naming what is
        /// wrong (`invalid request parameters: …`); a ``LiveQueriesError`` thrown
        /// by `Message`'s own decoding or by `request` reaches the client with
        /// its message; any other error as `the request was refused`, logged at
        /// debug level with the error. Call it in Vapor's synchronous
        /// `onUpgrade` closure (see ``webSocket(_:for:webSocket:scope:maxMessageSize:)``).
        ///
        /// - Parameters:
        ///   - messageType: what the client sends, decoded from each text or binary message.
        ///   - httpRequest: the upgraded HTTP request, whose logger is used.
        ///   - webSocket: the connection.
        ///   - scope: what clients must also share to share one observation.
        ///     It only separates sharing: it authorizes nothing, `request` does.
        ///   - maxMessageSize: the largest message accepted; a larger one
        ///     closes the connection (code 1009).
        ///   - request: the observed request for a message, built or checked
        ///     with the route's identity; throws to refuse it.
        public func webSocket<Message: Decodable & Sendable, R: Queryable>(
            receiving messageType: Message.Type,
            for httpRequest: Request,
            webSocket: WebSocket,
            scope: (any Hashable & Sendable)? = nil,
            maxMessageSize: Int = 1 << 16,
            request: @escaping @Sendable (Message) async throws -> R
        ) where R.Value: Encodable {
            let logger = httpRequest.logger
            let session = webSocketSession(
                receiving: Message.self, scope: scope, logger: logger, encode: Self.encodeJSON, request: request)
            let inbound = Inbound(webSocket, maxMessageSize: maxMessageSize)
            let connection = Connection(webSocket: webSocket, grace: configuration.shutdownWriteGrace)
            Task {
                await serve(
                    inbound: inbound, connection: connection, logger: logger,
                    receive: { await session.receive($0) }, clientLeft: { session.clientLeft() },
                    run: { try await session.run(write: $0) })
            }
        }

        /// Runs a session (a value subscription or a sync connection) until
        /// the connection closes: the client's messages in a child task, in
        /// order, one at a time (`receive`, then `clientLeft` once the
        /// connection closes), the writes (`run`, the session's
        /// `run(write:)`) in this one.
        func serve(
            inbound: Inbound, connection: Connection, logger: Logger,
            receive: @escaping @Sendable (Data) async -> Void, clientLeft: @escaping @Sendable () -> Void,
            run: (_ write: (Frame) async throws -> Void) async throws -> Void
        ) async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await message in inbound.messages { await receive(message) }
                    clientLeft()
                }
                do {
                    try await run { frame in
                        try await connection.send(frame.wire(.webSocket) { ByteBuffer(bytes: $0) })
                    }
                } catch {
                    logger.debug("Live query WebSocket ended", metadata: ["error": "\(error)"])
                }
                await connection.close()
                inbound.finish()
                // A message being handled (an application's resolver) stops too.
                group.cancelAll()
            }
        }
    }

    /// The client's messages, in order, from websocket-kit's callbacks: at
    /// most a few waiting; a client that sends faster than its requests are
    /// decided, or a message larger than the limit, is disconnected.
    struct Inbound: Sendable {
        let messages: AsyncStream<Data>
        private let continuation: AsyncStream<Data>.Continuation

        /// Listens to `webSocket`: at once on its event loop (a message
        /// that arrives before websocket-kit has a callback is lost), else
        /// as soon as the loop gets to it.
        init(_ webSocket: WebSocket, maxMessageSize: Int) {
            (messages, continuation) = AsyncStream.makeStream(of: Data.self, bufferingPolicy: .bufferingOldest(16))
            let continuation = continuation
            @Sendable func receive(_ webSocket: WebSocket, _ message: Data) {
                guard message.count <= maxMessageSize else {
                    webSocket.close(code: .messageTooLarge, promise: nil)
                    return
                }
                if case .dropped = continuation.yield(message) {
                    webSocket.close(code: .policyViolation, promise: nil)
                }
            }
            @Sendable func listen() {
                webSocket.onText { webSocket, text in receive(webSocket, Data(text.utf8)) }
                webSocket.onBinary { webSocket, buffer in receive(webSocket, Data(buffer.readableBytesView)) }
                webSocket.onClose.whenComplete { _ in continuation.finish() }
            }
            if webSocket.eventLoop.inEventLoop {
                listen()
            } else {
                webSocket.eventLoop.execute(listen)
            }
        }

        func finish() { continuation.finish() }
    }

    /// The connection's writes and its close.
    struct Connection: Sendable {
        let webSocket: WebSocket
        /// How long a client has to answer the close before the connection
        /// is closed without it.
        let grace: Duration

        /// Sends `buffer` as a text message. A kill of the session (a
        /// stalled client, the shutdown's grace over) cancels the calling
        /// task, which an awaited NIO write ignores: the connection is
        /// closed, and the blocked write fails with it.
        func send(_ buffer: ByteBuffer) async throws {
            try await withTaskCancellationHandler {
                let sent = webSocket.eventLoop.makePromise(of: Void.self)
                webSocket.send(buffer, opcode: .text, promise: sent)
                try await sent.futureResult.get()
            } onCancel: {
                closeWithoutWaiting(after: .milliseconds(1))
            }
        }

        /// Closes the connection (code 1000) and returns once it is closed:
        /// when the client answers, or after the grace.
        func close() async {
            closeWithoutWaiting(after: grace)
            try? await webSocket.onClose.get()
        }

        /// Sends the close and, if the client has not answered after
        /// `delay`, closes the connection: websocket-kit closes a connection
        /// whose ping went unanswered for an interval, and offers no other way.
        private func closeWithoutWaiting(after delay: Duration) {
            webSocket.close(code: .normalClosure, promise: nil)
            webSocket.pingInterval = .nanoseconds(Int64(delay / .nanoseconds(1)))
        }
    }
#endif
