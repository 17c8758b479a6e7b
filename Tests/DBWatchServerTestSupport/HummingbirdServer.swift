#if Hummingbird
    import DBWatch
    import DBWatchHummingbird
    import DBWatchTestSupport
    import HTTPTypes
    import Hummingbird
    import HummingbirdCore
    import HummingbirdWebSocket
    import Logging
    import NIOCore
    import ServiceLifecycle
    import Synchronization

    /// A running Hummingbird application on 127.0.0.1 with an ephemeral
    /// port, run by a ServiceLifecycle `ServiceGroup` as a Hummingbird app's
    /// `main` does, serving the routes of every ``AdapterServer`` and:
    ///
    /// - `GET /errors/missing`, `/errors/locked`, `/errors/internal`: a
    ///   Hummingbird `HTTPError`, a SQLite error and any other error thrown
    ///   behind ``LiveQueriesErrorMiddleware``
    ///
    /// With `trustedHosts`, a ``TrustedHostMiddleware`` allowing those names
    /// guards every route; with `page`, `GET /page` answers that HTML.
    public final class HummingbirdServer: AdapterServer {
        public let port: Int
        public let live: LiveQueries
        public let database: any DatabaseWriter
        private let group: ServiceGroup
        private let running: Task<Void, any Error>
        private let shutdownTriggered = Atomic<Bool>(false)

        private init(
            port: Int, live: LiveQueries, database: any DatabaseWriter, group: ServiceGroup,
            running: Task<Void, any Error>
        ) {
            self.port = port
            self.live = live
            self.database = database
            self.group = group
            self.running = running
        }

        /// Triggers graceful shutdown (once) and waits for the application to return.
        public func shutDown() async throws {
            if !shutdownTriggered.exchange(true, ordering: .relaxed) {
                await group.triggerGracefulShutdown()
            }
            try await running.value
        }

        /// Runs `body` against a new server, then shuts it down gracefully;
        /// with `limits`, an HTTP/1 server (no WebSocket) whose connections keep
        /// them, and with `maxConnections`, at most that many open at once.
        public static func with<T: Sendable>(
            kind: DatabaseKind = .inMemory,
            configuration: LiveQueriesConfiguration = testConfiguration(),
            logs: LogRecorder? = nil,
            detectsExternalChanges: Bool = false,
            trustedHosts: [String]? = nil,
            limits: ConnectionLimits? = nil,
            maxConnections: Int? = nil,
            page: String? = nil,
            _ body: @Sendable (HummingbirdServer) async throws -> T
        ) async throws -> T {
            let (live, logger) = try await makeTestLiveQueries(
                label: "HummingbirdServer", kind: kind, configuration: configuration, logs: logs,
                detectsExternalChanges: detectsExternalChanges)
            let router = Router(context: BasicWebSocketRequestContext.self)
            if let trustedHosts { router.add(middleware: TrustedHostMiddleware(allowedHosts: trustedHosts)) }
            addRoutes(to: router, live: live)
            if let page {
                // A test's own HTML page at `/page` (a README's example).
                router.get("page") { _, _ in
                    Response(
                        status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
                }
            }
            let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
            let app = Application(
                router: router,
                // With limits: HTTP/1 alone (the WebSocket builder cannot be wrapped from outside).
                // Frames of 64 KiB, the sync protocol's largest message (Hummingbird's default is 16 KiB).
                server: limits.map { .http1(limits: $0) }
                    ?? .http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(maxFrameSize: 1 << 16)),
                configuration: .init(
                    address: .hostname("127.0.0.1", port: 0),
                    availableConnectionsDelegate: maxConnections.map { MaximumAvailableConnections($0) }),
                services: [live],
                onServerRunning: { channel in
                    portContinuation.yield(channel.localAddress?.port ?? 0)
                    portContinuation.finish()
                },
                logger: logger)
            let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
            let running = Task { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else {
                running.cancel()
                throw TimeoutError(seconds: 0)
            }
            let server = HummingbirdServer(
                port: port, live: live, database: live.database, group: group, running: running)
            do {
                let result = try await body(server)
                try await server.shutDown()
                return result
            } catch {
                try? await server.shutDown()
                throw error
            }
        }

        private static func addRoutes(to router: Router<BasicWebSocketRequestContext>, live: LiveQueries) {
            live.addHealthRoutes(to: router)
            // The sync protocol: `top` (keyed, `n` players), `count` (whole
            // values), `checked` (fails while `control.fail` is set).
            let user = HTTPField.Name("X-User")!
            live.addSyncRoutes(to: router, owner: { request, _ in request.headers[user] }) { subscription, _, _ in
                try syncQuery(subscription)
            }
            router.ws("sync/socket") { inbound, outbound, context in
                try await live.syncWebSocket(inbound: inbound, outbound: outbound, context: context) {
                    try syncQuery($0)
                }
            }
            live.addJavaScriptClientRoute(to: router)
            router.get("top") { request, context in
                let limit = request.uri.queryParameters.get("limit", as: Int.self) ?? 10
                guard limit >= 0 else {
                    return live.errorResponse(
                        LiveQueriesError.badRequest("limit must not be negative"), logger: context.logger)
                }
                return await live.current(TopPlayers(limit: limit), context: context)
            }
            router.get("top/events") { request, context in
                let limit = request.uri.queryParameters.get("limit", as: Int.self) ?? 10
                let scope = request.uri.queryParameters.get("scope").map { String($0) }
                return live.events(TopPlayers(limit: limit), for: request, context: context, scope: scope)
            }
            router.get("checked/events") { request, context in
                live.events(CheckedPlayers(), for: request, context: context)
            }
            router.get("hand") { _, context in await live.current(HandWrittenPlayers(), context: context) }
            router.get("hand/events") { request, context in
                live.events(HandWrittenPlayers(), for: request, context: context)
            }
            router.get("big/events") { request, context in
                live.events(BigText(), for: request, context: context)
            }
            router.post("players/:name/:score") { _, context in
                let name = try context.parameters.require("name")
                let score = try context.parameters.require("score", as: Int.self)
                do {
                    try await live.database.write { db in
                        try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: [name, score])
                    }
                    return Response(status: .created)
                } catch {
                    return live.errorResponse(error, logger: context.logger)
                }
            }
            // A LiveQueriesError thrown from a route, without and with the middleware.
            router.get("refused") { _, _ -> Response in throw LiveQueriesError.forbidden("these are not your todos") }
            let errors = router.group("errors").add(middleware: LiveQueriesErrorMiddleware(live))
            errors.get("missing") { _, _ -> Response in
                throw HTTPError(.notFound, headers: [.allow: "GET"], message: "no such player")
            }
            errors.get("locked") { _, _ -> Response in throw SQLiteError(code: .busy, message: "database is locked") }
            errors.get("internal") { _, _ -> Response in throw ServerSecret(path: "/srv/app.sqlite") }
            router.ws("top/socket") { inbound, outbound, context in
                try await live.webSocket(TopPlayers.self, inbound: inbound, outbound: outbound, context: context)
            }
            // Large values on a WebSocket: the client sends a `TodoFilter`.
            router.ws("big/socket") { inbound, outbound, context in
                try await live.webSocket(
                    receiving: TodoFilter.self, inbound: inbound, outbound: outbound, context: context
                ) { _ in BigText() }
            }
            // The identity is a header here; a real server's authentication puts it in the context.
            router.ws("todos/socket") { inbound, outbound, context in
                let owner = context.request.headers[user] ?? ""
                try await live.webSocket(
                    receiving: TodoFilter.self, inbound: inbound, outbound: outbound, context: context, scope: owner
                ) { filter in
                    Todos(owner: owner, limit: filter.limit)
                }
            }
            router.ws("todos/checked/socket") { inbound, outbound, context in
                let owner = context.request.headers[user] ?? ""
                try await live.webSocket(
                    receiving: Todos.self, inbound: inbound, outbound: outbound, context: context, scope: owner
                ) { todos in
                    guard todos.owner == owner else { throw LiveQueriesError.forbidden("these are not your todos") }
                    return todos
                }
            }
        }
    }

    /// An error whose text the server must not send (it names a path).
    public struct ServerSecret: Error {
        public let path: String
    }
#endif
