import DBWatch
import DBWatchDelivery
import DBWatchHummingbird
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The request context of `serve`: Hummingbird's basics and the client's
/// address, for the log lines.
struct ServeRequestContext: RequestContext, RemoteAddressRequestContext {
    /// Hummingbird's storage.
    var coreContext: CoreRequestContextStorage
    /// The client's address.
    let remoteAddress: SocketAddress?
    /// Who the client is, once ``AccessMiddleware`` authenticated it.
    var identity = ServeAccess.Identity.anonymous

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// The HTTP side of `serve` (and `demo --serve`): the routes over a
/// ``LiveQueries``, the limit on clients and the log lines.
///
/// - `GET /`: the page (``ServePage``)
/// - `GET /queries`: names, SQL, parameters, what each observes
/// - `GET /queries/NAME?p=v`: the current value, `{"columns", "rows"}`
/// - `GET /queries/NAME/events?p=v`: server-sent events of the value
/// - `GET /healthz`: 200 while the process answers; `GET /readyz`: 200
///   when the database answers a read, else 503 (no token needed: a load
///   balancer's checks)
/// - `GET /metrics` (`--metrics`): Prometheus' text format
/// - any other path: 404 with a JSON body; any other method: 405
/// - a `Host` that is not this machine's, the listening address or an
///   allowed name: 403 (``TrustedHostMiddleware``); none: 400
///
/// ```swift
/// let server = QueryServer(live: live, queries: queries, limits: limits, maxClients: 10_000, logsClients: true, title: "app.sqlite")
/// let app = server.application(host: "127.0.0.1", port: 8080, logger: logger) { address in print(address) }
/// ```
final class QueryServer: Sendable {
    /// The live queries served.
    let live: LiveQueries
    /// The queries, in the order given.
    let queries: [ServedQuery]
    private let queriesByName: [String: ServedQuery]
    /// The limits each query runs under.
    let limits: QueryLimits
    /// The most streams open at once.
    let maxClients: Int
    /// Whether each client's arrival and departure is a line on standard error.
    let logsClients: Bool
    /// What the page shows as its title (the database's file name).
    let title: String
    /// The names besides loopback names and IP addresses that requests may
    /// give as their `Host` (`--host`, `--allow-host`).
    let allowedHosts: [String]
    /// The cap on connections and what each may hold.
    let connections: ServeConnections
    /// Who may read (``AccessMiddleware``).
    let access: ServeAccess
    /// `GET /metrics`, when served.
    let metrics: PrometheusEndpoint?
    /// The claims a sync connection belongs to, when `--session-claims`
    /// names them: those and every claim a query binds.
    private let ownerClaims: Set<String>?
    private let streams = Atomic<Int>(0)
    private let clientNumbers = Atomic<Int>(0)

    init(
        live: LiveQueries, queries: [ServedQuery], limits: QueryLimits, maxClients: Int, logsClients: Bool,
        title: String, allowedHosts: [String] = [], connections: ServeConnections = ServeConnections(),
        access: ServeAccess = .open, metrics: PrometheusEndpoint? = nil
    ) {
        self.live = live
        self.queries = queries
        queriesByName = Dictionary(queries.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.limits = limits
        self.maxClients = maxClients
        self.logsClients = logsClients
        self.title = title
        self.allowedHosts = allowedHosts
        self.connections = connections
        self.access = access
        self.metrics = metrics
        ownerClaims = access.sessionClaims.map { $0.union(queries.flatMap(\.claimNames)) }
    }

    /// Streams open now.
    var openStreams: Int { streams.load(ordering: .relaxed) }

    /// The application: the server on `host:port` (0: any free port), then
    /// ``live`` among its services. `onListening` gets the bound address.
    func application(
        host: String, port: Int, logger: Logger,
        onListening: @escaping @Sendable (SocketAddress?) async -> Void
    ) -> some ApplicationProtocol {
        Application(
            router: makeRouter(),
            server: connections.server,
            configuration: connections.configuration(host: host, port: port, logger: logger),
            services: [live],
            onServerRunning: { channel in await onListening(channel.localAddress) },
            logger: logger)
    }

    func makeRouter() -> Router<ServeRequestContext> {
        let router = Router(context: ServeRequestContext.self)
        // First: a request for another name (DNS rebinding) runs nothing else.
        router.add(middleware: TrustedHostMiddleware(allowedHosts: allowedHosts))
        router.add(middleware: JSONErrorMiddleware())
        router.add(middleware: AccessMiddleware(access: access))
        live.addHealthRoutes(to: router)
        if let metrics {
            let reporter = LiveQueriesMetrics(live, factory: metrics.factory)
            metrics.addRoute(to: router) { reporter.record() }
        }
        let page = ByteBuffer(string: ServePage.html(title: title))
        router.get("/") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-cache"],
                body: ResponseBody(byteBuffer: page))
        }
        let list = ByteBuffer(string: JSON.array(queries.map(\.json)).rendered())
        router.get("queries") { _, _ in
            Response(status: .ok, headers: Self.jsonHeaders, body: ResponseBody(byteBuffer: list))
        }
        router.get("queries/:name") { [self] request, context in
            let query: WatchedQuery
            switch lookUp(request, context: context) {
            case .success(let request): query = request
            case .failure(let response): return response
            }
            return await live.current(query, context: context)
        }
        router.get("queries/:name/events") { [self] request, context in
            events(for: request, context: context)
        }
        // The sync protocol: the same queries, keyed by their key columns.
        router.get("sync") { [self] request, context in
            let owner = try syncOwner(of: context.identity)
            return counted(request, context: context) {
                live.syncEvents(for: request, context: context, owner: owner) { [self] subscription in
                    try syncQuery(subscription, identity: context.identity)
                }
            }
        }
        router.post("sync/:session") { [self] request, context in
            await live.syncMessage(request, context: context, owner: try syncOwner(of: context.identity))
        }
        // The catch-up over plain HTTP: shared caches may keep complete
        // answers only when no credentials decide what a query returns.
        router.get("sync/queries/:name") { [self] request, context in
            let identity = context.identity
            return await live.syncCatchUp(for: request, context: context, shared: identity == .anonymous) {
                [self] subscription in
                try syncQuery(subscription, identity: identity)
            }
        }
        live.addJavaScriptClientRoute(to: router)
        return router
    }

    /// The sync query a subscription names, with the access rules of
    /// `/queries/NAME` (a JWT's claims bind parameters and allow queries).
    private func syncQuery(_ subscription: SyncSubscription, identity: ServeAccess.Identity) throws -> SyncQuery {
        guard let query = queriesByName[subscription.query] else {
            throw LiveQueriesError.unknownQuery(subscription.query)
        }
        let parameters = subscription.params.sorted { $0.key < $1.key }.map { (key: $0.key[...], value: $0.value[...]) }
        let watched: WatchedQuery
        do {
            watched = try query.request(queryString: parameters, identity: identity, limits: limits)
        } catch let refusal as AccessRefusal {
            throw LiveQueriesError.forbidden(refusal.description)
        }
        let key = query.key
        return SyncQuery(watched, scope: nil) { result in
            // The key `/queries` names, else the columns the result found.
            let names = key ?? result.keyColumns.map { $0.map { result.columns[$0] } }
            return SyncValue(
                rows: names.flatMap { try? result.keyedRows(key: $0) }, columns: result.columns,
                encode: { Array(try result.encodedJSON()) })
        }
    }

    private enum Lookup {
        case success(WatchedQuery)
        case failure(Response)
    }

    /// The observed request a URL names, or the error answer.
    private func lookUp(_ request: Request, context: ServeRequestContext) -> Lookup {
        let name = context.parameters.get("name") ?? ""
        guard let query = queriesByName[name] else {
            return .failure(
                Self.refused(
                    .notFound, "no query named \(name); the queries are listed at /queries", request: request,
                    context: context))
        }
        do {
            let parameters = try ServedQuery.queryParameters(request.uri.query)
            return .success(try query.request(queryString: parameters, identity: context.identity, limits: limits))
        } catch let refusal as AccessRefusal {
            return .failure(Self.refused(.forbidden, refusal.description, request: request, context: context))
        } catch {
            // Logged by the live queries, as their own refusals.
            return .failure(live.errorResponse(error, logger: context.logger))
        }
    }

    /// A server-sent events stream, counted against ``maxClients`` and
    /// logged when it starts and ends.
    private func events(for request: Request, context: ServeRequestContext) -> Response {
        let query: WatchedQuery
        switch lookUp(request, context: context) {
        case .success(let request): query = request
        case .failure(let response): return response
        }
        return counted(request, context: context) { live.events(query, for: request, context: context) }
    }

    /// A stream (`stream` makes its response), counted against
    /// ``maxClients`` and logged when it starts and ends.
    /// Who a sync connection opened or posted to by `identity` belongs to
    /// (``ServeAccess/Identity/connectionOwner(claims:)``). A JWT without a
    /// claim `--session-claims` names is refused (403): claims missing from
    /// two tokens would make their holders one owner.
    private func syncOwner(of identity: ServeAccess.Identity) throws(LiveQueriesError) -> ServeAccess.Identity {
        if let required = access.sessionClaims, let claims = identity.claims,
            let missing = required.sorted().first(where: { claims.value(of: $0) == nil })
        {
            throw .forbidden("the token has no claim \(missing), which --session-claims names")
        }
        return identity.connectionOwner(claims: ownerClaims)
    }

    private func counted(
        _ request: Request, context: ServeRequestContext, stream: () -> Response
    ) -> Response {
        guard streams.add(1, ordering: .relaxed).newValue <= maxClients else {
            streams.subtract(1, ordering: .relaxed)
            return Self.refused(
                .serviceUnavailable, "too many clients: this server takes \(maxClients) streams at once",
                request: request, context: context)
        }
        // Released once: when the stream ends, or when the response is
        // dropped without its body ever running (the client left first).
        let slot = StreamSlot { [self] in streams.subtract(1, ordering: .relaxed).newValue }
        var response = stream()
        guard response.status == .ok else {
            slot.release()
            return response
        }
        let number = clientNumbers.add(1, ordering: .relaxed).newValue
        let path = CellText.sanitized(request.uri.path + (request.uri.query.map { "?" + $0 } ?? ""))
        let address = context.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"
        let body = response.body
        response.body = ResponseBody { [self] writer in
            let started = ContinuousClock.now
            log("client \(number) connected from \(address): \(path) (\(openStreams) open)")
            var reason = "stream ended"
            defer {
                let open = slot.release() ?? openStreams
                let elapsed = (ContinuousClock.now - started).components
                let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
                log("client \(number) left: \(reason) after \(String(format: "%.1f", seconds)) s (\(open) open)")
            }
            do {
                try await body.write(writer)
            } catch {
                reason = "disconnected"
                throw error
            }
        }
        return response
    }

    private func log(_ line: String) {
        guard logsClients else { return }
        Output.standardError("dbwatch: \(Timestamp.iso8601(Date())) \(line)\n")
    }

    static let jsonHeaders: HTTPFields = [.contentType: "application/json; charset=utf-8"]

    /// An error answer in the one JSON shape of the live queries,
    /// `{"message": …}`.
    static func errorResponse(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(.error(status: status.code, message: message))
    }

    /// ``errorResponse(_:_:)`` for a request `serve` refuses itself (not
    /// the live queries, which log their own), logged as one debug line
    /// with the stable keys: `dbwatch.status`, `dbwatch.reason`,
    /// `dbwatch.path` and `dbwatch.client`.
    static func refused(
        _ status: HTTPResponse.Status, _ message: String, request: Request, context: some RequestContext
    ) -> Response {
        let address = (context as? any RemoteAddressRequestContext)?.remoteAddress
        context.logger.requestRefused(
            status: status.code, reason: message, path: request.uri.path,
            client: address.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" })
        return errorResponse(status, message)
    }
}

/// Any path without a route is a JSON error answer, not an empty one; any
/// method but GET is a 405, except the sync protocol's messages
/// (`POST /sync/SESSION`).
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let isSyncMessage = request.method == .post && request.uri.path.hasPrefix("/sync/")
        guard request.method == .get || isSyncMessage else {
            var response = QueryServer.refused(
                .methodNotAllowed, "only GET is served: \(request.method) \(request.uri.path) is not", request: request,
                context: context)
            response.headers[.allow] = "GET"
            return response
        }
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            let message =
                error.status == .notFound
                ? "no such path: \(request.uri.path); the queries are listed at /queries"
                : (error.body ?? error.status.reasonPhrase)
            return QueryServer.refused(error.status, message, request: request, context: context)
        }
    }
}

/// One place among ``QueryServer/maxClients``, given back exactly once.
final class StreamSlot: Sendable {
    private let released = Atomic<Bool>(false)
    private let giveBack: @Sendable () -> Int

    /// A slot that `giveBack` returns (and says how many remain taken).
    init(giveBack: @escaping @Sendable () -> Int) {
        self.giveBack = giveBack
    }

    /// Gives the slot back; returns the streams still open, or nil if it
    /// was already given back.
    @discardableResult
    func release() -> Int? {
        released.exchange(true, ordering: .relaxed) ? nil : giveBack()
    }

    deinit { release() }
}
