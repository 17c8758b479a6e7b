#if Vapor
    import DBWatch
    import Foundation
    import NIOCore
    import Vapor

    extension LiveQueries {
        /// Adds the sync protocol's routes (see "The Sync Protocol" in
        /// DBWatchDelivery): `GET /PATH` opens a connection over server-sent
        /// events, `POST /PATH/SESSION` carries its client's `subscribe` and
        /// `unsubscribe` messages (64 KiB at most), `GET /PATH/socket` opens a
        /// connection over a WebSocket (the client's messages on the socket),
        /// and `GET /PATH/queries/NAME?PARAMS&since=POSITION` is the catch-up
        /// over plain HTTP (see ``syncCatchUp(for:shared:resolve:)``).
        /// `resolve` turns each subscription into a `SyncQuery` (throw
        /// `LiveQueriesError.unknownQuery(_:)` for a name you do not serve);
        /// `owner` names who opens a connection (a user id), so that only the
        /// same may post to it. A catch-up with an owner, or with an
        /// `Authorization` or `Cookie` header, is not for shared caches.
        ///
        /// ```swift
        /// live.addSyncRoutes(to: app) { subscription, request in
        ///     guard subscription.query == "leaderboard" else { throw LiveQueriesError.unknownQuery(subscription.query) }
        ///     return .identifiable(TopPlayers(limit: Int(subscription.params["n"] ?? "") ?? 10))
        /// }
        /// ```
        ///
        /// Behind authentication, the owner is the authenticated user:
        ///
        /// ```swift
        /// live.addSyncRoutes(to: app.grouped(UserAuthenticator()), owner: { $0.auth.get(User.self)?.id }) {
        ///     subscription, request in …
        /// }
        /// ```
        ///
        /// The JavaScript client (`LiveQueries.javaScriptClient`, served with
        /// ``addJavaScriptClientRoute(to:path:)``) speaks it from a page.
        ///
        /// - Parameters:
        ///   - routes: the application (or route group) the routes are added to.
        ///   - path: the routes' path, `sync` by default; `"api/sync"` for
        ///     `/api/sync`.
        ///   - owner: who opens a connection, from its request; `nil` (the
        ///     default) for anyone.
        ///   - resolve: the query of a subscription, with the request that
        ///     opened the connection (or asked for a catch-up); throws to
        ///     refuse it.
        public func addSyncRoutes(
            to routes: some RoutesBuilder, path: String = "sync",
            owner: @escaping @Sendable (Request) -> (any Hashable & Sendable)? = { _ in nil },
            resolve: @escaping @Sendable (SyncSubscription, Request) async throws -> SyncQuery
        ) {
            let path = path.pathComponents
            routes.get(path) { [self] request -> Response in
                syncEvents(for: request, owner: owner(request)) { try await resolve($0, request) }
            }
            // A streamed body: the handler collects it up to its own limit.
            routes.on(.POST, path + [":session"], body: .stream) { [self] request async -> Response in
                await syncMessage(request, owner: owner(request))
            }
            routes.webSocket(
                path + ["socket"], maxFrameSize: WebSocketMaxFrameSize(integerLiteral: Self.maximumSyncMessageBytes)
            ) { [self] request, webSocket in
                syncWebSocket(for: request, webSocket: webSocket) { try await resolve($0, request) }
            }
            routes.get(path + ["queries", ":name"]) { [self] request async -> Response in
                let shared = Self.catchUpIsShared(owner: owner(request)) { request.headers.first(name: $0) }
                return await syncCatchUp(for: request, shared: shared) { try await resolve($0, request) }
            }
        }

        /// The answer to `GET /PATH` (see ``addSyncRoutes(to:path:owner:resolve:)``),
        /// for a server that adds its own routes: a sync connection over
        /// server-sent events (`hello`, then batches), or the refusal (a JSON
        /// 503 when the server shuts down or the database is closed).
        ///
        /// ```swift
        /// app.get("sync") { request in
        ///     live.syncEvents(for: request, owner: nil) { _ in .identifiable(TopPlayers(limit: 10)) }
        /// }
        /// ```
        ///
        /// A comment line every ``LiveQueriesConfiguration/keepAliveInterval``
        /// while idle; a client that disconnects ends its connection within
        /// ``disconnectCheckInterval``; graceful shutdown (the live queries'
        /// lifecycle handler) ends the stream with `end`.
        ///
        /// - Parameters:
        ///   - request: the request, whose logger is used.
        ///   - owner: who opens the connection: only a `POST` for the same
        ///     is accepted (see ``syncMessage(_:owner:)``).
        ///   - resolve: turns each subscription into a `SyncQuery`, as for
        ///     ``addSyncRoutes(to:path:owner:resolve:)``.
        public func syncEvents(
            for request: Request, owner: (any Hashable & Sendable)?,
            resolve: @escaping @Sendable (SyncSubscription) async throws -> SyncQuery
        ) -> Response {
            switch syncSession(
                transport: .serverSentEvents, owner: SyncOwner(owner), logger: request.logger, resolve: resolve)
            {
            case .failure(let refusal):
                return Response(syncRefusal(refusal))
            case .success(let session):
                let body = EventStreamBody.body(
                    run: { try await session.run(write: $0) }, clientLeft: session.clientLeft)
                return Response(status: .ok, headers: HTTPHeaders(SyncSession.eventStreamHeaders), body: body)
            }
        }

        /// The answer to `POST /PATH/:session` (see ``addSyncRoutes(to:path:owner:resolve:)``),
        /// for a server that adds its own routes: `202`, or the refusal in the
        /// one error shape (`404 unknownSession` for a session that does not
        /// exist or that another owner opened, `400` for a body longer than
        /// 64 KiB or a message that does not parse).
        ///
        /// Register the route with a streamed body: Vapor collects a body of
        /// 16 KiB at most by default, and answers a longer one itself.
        ///
        /// ```swift
        /// app.on(.POST, "sync", ":session", body: .stream) { request async in
        ///     await live.syncMessage(request, owner: nil)
        /// }
        /// ```
        ///
        /// - Parameters:
        ///   - request: the request; its path's `session` parameter names the session.
        ///   - owner: who posts: the session must have been opened by the same.
        public func syncMessage(_ request: Request, owner: (any Hashable & Sendable)?) async -> Response {
            guard let session = request.parameters.get("session") else {
                return Response(syncRefusal(.unknownSession))
            }
            let body: ByteBuffer?
            do {
                // Vapor refuses a streamed body that reaches `max`.
                body = try await request.body.collect(max: Self.maximumSyncMessageBytes + 1).get()
            } catch {
                return Response(syncMessageTooLong())
            }
            // A body collected before (a route's default strategy) was not checked.
            guard (body?.readableBytes ?? 0) <= Self.maximumSyncMessageBytes else {
                return Response(syncMessageTooLong())
            }
            do throws(LiveQueriesError) {
                let json = body.map { Data($0.readableBytesView) } ?? Data()
                try await receiveSyncMessage(json, session: session, owner: SyncOwner(owner))
                return Response(Self.syncAccepted)
            } catch {
                return Response(syncRefusal(error))
            }
        }

        /// A sync connection over a WebSocket: the client's messages are text
        /// messages (64 KiB at most; a longer one closes the connection with
        /// code 1009), and so are the server's (see "The Sync Protocol" in
        /// DBWatchDelivery). The client's messages are handled in order, one
        /// at a time; websocket-kit cannot slow a client down, so one that
        /// has 16 messages waiting is disconnected (code 1008): send many
        /// subscriptions as one array.
        /// A refused connection (the server shuts down, the database is
        /// closed) gets the refusal as its one message, then the close.
        ///
        /// ```swift
        /// app.webSocket("sync", "socket", maxFrameSize: 1 << 16) { request, webSocket in
        ///     live.syncWebSocket(for: request, webSocket: webSocket) { subscription in
        ///         .identifiable(TopPlayers(limit: Int(subscription.params["n"] ?? "") ?? 10))
        ///     }
        /// }
        /// ```
        ///
        /// Call it in Vapor's synchronous `onUpgrade` closure, as above: there,
        /// on the connection's event loop, it listens before the client's
        /// first message can arrive. It returns at once; a task serves the
        /// connection until it closes.
        ///
        /// - Parameters:
        ///   - request: the upgraded HTTP request, whose logger is used.
        ///   - webSocket: the connection.
        ///   - resolve: turns each subscription into a `SyncQuery`, as for
        ///     ``addSyncRoutes(to:path:owner:resolve:)``.
        public func syncWebSocket(
            for request: Request, webSocket: WebSocket,
            resolve: @escaping @Sendable (SyncSubscription) async throws -> SyncQuery
        ) {
            let logger = request.logger
            let connection = Connection(webSocket: webSocket, grace: configuration.shutdownWriteGrace)
            switch syncSession(transport: .webSocket, owner: SyncOwner(nil), logger: logger, resolve: resolve) {
            case .failure(let refusal):
                let message = ByteBuffer(bytes: syncRefusal(refusal).body)
                Task {
                    try? await connection.send(message)
                    await connection.close()
                }
            case .success(let session):
                let inbound = Inbound(webSocket, maxMessageSize: Self.maximumSyncMessageBytes)
                Task {
                    await serve(
                        inbound: inbound, connection: connection, logger: logger,
                        receive: { try? await session.receive($0) }, clientLeft: session.clientLeft,
                        run: { try await session.run(write: $0) })
                }
            }
        }

        /// The answer to `GET /PATH/queries/:name?PARAMS&since=POSITION`, the
        /// sync protocol's catch-up over plain HTTP (see "Catching up over
        /// plain HTTP" in DBWatchDelivery), for a server that adds its own
        /// routes: the keyed changes of the query named by the path's `name`
        /// with the query string's parameters (all but `since`), from `since`
        /// on, in steps.
        ///
        /// ```swift
        /// app.get("sync", "queries", ":name") { request async in
        ///     await live.syncCatchUp(for: request, shared: true) { subscription in
        ///         .identifiable(TopPlayers(limit: Int(subscription.params["n"] ?? "") ?? 10))
        ///     }
        /// }
        /// ```
        ///
        /// A complete answer (it never changes) is `Cache-Control: public,
        /// max-age=31536000, immutable` when `shared` (else `private, …`); the
        /// last one, up to the server's position, and every refusal are
        /// `no-store`.
        ///
        /// - Parameters:
        ///   - request: the request; its path's `name` parameter names the query.
        ///   - shared: whether the answer is the same whoever asks (no
        ///     credentials decide what the query returns): a complete answer
        ///     is then `Cache-Control: public`, else `private`.
        ///   - resolve: turns the subscription into a `SyncQuery`, as for
        ///     ``addSyncRoutes(to:path:owner:resolve:)``.
        public func syncCatchUp(
            for request: Request, shared: Bool,
            resolve: @escaping @Sendable (SyncSubscription) async throws -> SyncQuery
        ) async -> Response {
            let (subscription, since) = Self.catchUpRequest(
                name: request.parameters.get("name") ?? "", query: Self.queryParameters(request.url.query))
            return Response(
                await syncCatchUp(subscription, since: since, shared: shared, logger: request.logger, resolve: resolve))
        }

        /// Serves `LiveQueries.javaScriptClient` (`dbwatch.js`) at `GET /PATH`.
        ///
        /// ```swift
        /// live.addJavaScriptClientRoute(to: app)   // <script type="module"> import { connect } from "/dbwatch.js"
        /// ```
        ///
        /// - Parameters:
        ///   - routes: the application (or route group) the route is added to.
        ///   - path: the route's path, `dbwatch.js` by default.
        public func addJavaScriptClientRoute(to routes: some RoutesBuilder, path: String = "dbwatch.js") {
            routes.get(path.pathComponents) { _ in Response(LiveQueries.javaScriptClientAnswer) }
        }

        /// The name-value pairs of a percent-encoded query string, decoded
        /// (a pair that does not decode as it is sent).
        private static func queryParameters(_ query: String?) -> [(name: String, value: String)] {
            guard let query, !query.isEmpty else { return [] }
            return query.split(separator: "&").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decoded(_ part: Substring) -> String { part.removingPercentEncoding ?? String(part) }
                return (name: decoded(parts[0]), value: parts.count > 1 ? decoded(parts[1]) : "")
            }
        }
    }
#endif
