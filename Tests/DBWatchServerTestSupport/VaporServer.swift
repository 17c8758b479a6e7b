#if Vapor
    import DBWatch
    import DBWatchTestSupport
    import DBWatchVapor
    import Logging
    import Synchronization
    import Vapor

    /// A running Vapor application on 127.0.0.1 with an ephemeral port,
    /// started and stopped as a Vapor app's `main` does (`startup()` runs the
    /// `serve` command, then `running.stop()` as on SIGTERM, then
    /// `asyncShutdown()`), serving the routes of every ``AdapterServer``
    /// (`GET /top` and `POST /players/:name/:score` throw their errors) and:
    ///
    /// - `/top/small/socket`: `/top/socket` with messages of 64 bytes at most
    /// - the sync protocol: `GET /sync`, `POST /sync/:session` (its owner
    ///   the `X-User` header), `/sync/socket`, `GET /sync/queries/:name`,
    ///   with the queries `top` and `count`; `GET /dbwatch.js`
    /// - `/healthz` and `/readyz` (`live.addHealthRoutes(to: app)`)
    ///
    /// Errors thrown by routes are answered by ``LiveQueriesErrorMiddleware``.
    public final class VaporServer: AdapterServer {
        public let port: Int
        public let live: LiveQueries
        public let database: any DatabaseWriter
        private let app: Application
        private let stopped = Mutex(false)

        private init(port: Int, live: LiveQueries, database: any DatabaseWriter, app: Application) {
            self.port = port
            self.live = live
            self.database = database
            self.app = app
        }

        /// Shuts the application down as its `main` does on SIGTERM (once):
        /// the lifecycle handlers (the live queries), then the HTTP server.
        public func shutDown() async throws {
            let first = stopped.withLock { stopped in
                defer { stopped = true }
                return !stopped
            }
            guard first else { return }
            app.running?.stop()
            try await app.asyncShutdown()
        }

        /// Runs `body` against a new server, then shuts it down gracefully;
        /// `shutdownAfterLiveQueries` is a lifecycle handler whose shutdown
        /// Vapor runs after the live queries' and before its HTTP server stops;
        /// `handlers` makes lifecycle handlers of the live queries (a
        /// `LiveQueriesMetrics`), booted after them and shut down before.
        public static func with<T: Sendable>(
            kind: DatabaseKind = .inMemory,
            configuration: LiveQueriesConfiguration = testConfiguration(),
            logs: LogRecorder? = nil,
            detectsExternalChanges: Bool = false,
            shutdownAfterLiveQueries: (any LifecycleHandler)? = nil,
            handlers: (LiveQueries) -> [any LifecycleHandler] = { _ in [] },
            _ body: @Sendable (VaporServer) async throws -> T
        ) async throws -> T {
            let (live, logger) = try await makeTestLiveQueries(
                label: "VaporServer", kind: kind, configuration: configuration, logs: logs,
                detectsExternalChanges: detectsExternalChanges)
            // The `serve` command's own arguments, not the test runner's.
            let environment = Environment(
                name: "testing", arguments: ["vapor", "serve", "--hostname", "127.0.0.1", "--port", "0"])
            let app = try await Application.make(environment, logger: logger)
            // Vapor shuts handlers down in reverse order: this one after the live queries.
            if let shutdownAfterLiveQueries { app.lifecycle.use(shutdownAfterLiveQueries) }
            app.lifecycle.use(live)
            for handler in handlers(live) { app.lifecycle.use(handler) }
            app.middleware.use(LiveQueriesErrorMiddleware(live))
            addRoutes(to: app, live: live)
            do {
                try await app.startup()
            } catch {
                try? await app.asyncShutdown()
                throw error
            }
            let port = app.http.server.shared.localAddress?.port ?? 0
            let server = VaporServer(port: port, live: live, database: live.database, app: app)
            do {
                let result = try await body(server)
                try await server.shutDown()
                return result
            } catch {
                try? await server.shutDown()
                throw error
            }
        }

        private static func addRoutes(to app: Application, live: LiveQueries) {
            live.addHealthRoutes(to: app)
            // The sync protocol, `/sync/socket` included: `top` (keyed, `n`
            // players), `count` (whole values); the owner is the `X-User`.
            live.addSyncRoutes(to: app, owner: { $0.headers.first(name: "X-User") }) { subscription, _ in
                try syncQuery(subscription)
            }
            live.addJavaScriptClientRoute(to: app)
            app.get("top") { request async throws -> Response in
                let limit = request.query[Int.self, at: "limit"] ?? 10
                guard limit >= 0 else { throw LiveQueriesError.badRequest("limit must not be negative") }
                return await live.current(TopPlayers(limit: limit), for: request)
            }
            app.get("refused") { _ -> Response in throw LiveQueriesError.forbidden("these are not your todos") }
            app.get("top", "events") { request -> Response in
                let limit = request.query[Int.self, at: "limit"] ?? 10
                let scope = request.query[String.self, at: "scope"]
                return live.events(TopPlayers(limit: limit), for: request, scope: scope)
            }
            app.get("checked", "events") { request in live.events(CheckedPlayers(), for: request) }
            app.get("hand") { request in await live.current(HandWrittenPlayers(), for: request) }
            app.get("hand", "events") { request in live.events(HandWrittenPlayers(), for: request) }
            app.get("big", "events") { request in live.events(BigText(), for: request) }
            app.post("players", ":name", ":score") { request async throws -> HTTPStatus in
                let name = try request.parameters.require("name")
                let score = try request.parameters.require("score", as: Int.self)
                try await live.database.write { db in
                    try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: [name, score])
                }
                return .created
            }
            app.webSocket("top", "socket") { request, webSocket in
                live.webSocket(TopPlayers.self, for: request, webSocket: webSocket)
            }
            app.webSocket("top", "small", "socket") { request, webSocket in
                live.webSocket(TopPlayers.self, for: request, webSocket: webSocket, maxMessageSize: 64)
            }
            // Large values on a WebSocket: the client sends a `TodoFilter`.
            app.webSocket("big", "socket") { request, webSocket in
                live.webSocket(receiving: TodoFilter.self, for: request, webSocket: webSocket) { _ in BigText() }
            }
            // The identity is a header here; a real server's authentication puts it in `request.auth`.
            app.webSocket("todos", "socket") { request, webSocket in
                let owner = request.headers.first(name: "X-User") ?? ""
                live.webSocket(receiving: TodoFilter.self, for: request, webSocket: webSocket, scope: owner) {
                    filter in Todos(owner: owner, limit: filter.limit)
                }
            }
            app.webSocket("todos", "checked", "socket") { request, webSocket in
                let owner = request.headers.first(name: "X-User") ?? ""
                live.webSocket(receiving: Todos.self, for: request, webSocket: webSocket, scope: owner) {
                    todos in
                    guard todos.owner == owner else { throw LiveQueriesError.forbidden("these are not your todos") }
                    return todos
                }
            }
        }
    }
#endif
