import DBWatch
import DBWatchHummingbird
import Foundation
import Hummingbird
import HummingbirdAuth
import HummingbirdWebSocket
import Logging

/// Where the leaderboard server listens and keeps its database.
public struct LeaderboardConfiguration: Sendable {
    /// The address to listen on.
    public var host = "127.0.0.1"
    /// The port to listen on; 0 picks a free one.
    public var port = 8080
    /// The SQLite file, created and migrated on start.
    public var databasePath = "leaderboard.sqlite"
    /// The server's logger.
    public var logger = Logger(label: "LeaderboardServer")
    /// The bearer tokens of `/me/events`, each with the player it stands for.
    public var tokens: [String: Viewer] = [:]

    /// The defaults: 127.0.0.1:8080, `leaderboard.sqlite` in the current directory.
    public init() {}
}

/// The leaderboard server: opens and migrates the database, then serves
///
/// - `GET /`: a page showing the live leaderboard and the number of players,
///   on one connection of the sync protocol (`/dbwatch.js`),
/// - `GET /sync` and `POST /sync/:session`: the sync protocol, serving the
///   queries `leaderboard` (keyed by name; parameter `limit`, 0 to 100,
///   10 by default) and `players` (the number of players, whole values),
/// - `GET /dbwatch.js`: the sync protocol's JavaScript client,
/// - `GET /leaderboard`: the leaderboard as JSON,
/// - `GET /leaderboard/events`: the leaderboard as server-sent events,
/// - `/leaderboard/socket`: the leaderboard on a WebSocket (send `{"limit": 3}`),
/// - `POST /players/:name/score` with `{"score": 120}`: sets a player's score,
/// - `GET /me/events` with `Authorization: Bearer TOKEN`: the token's
///   player's own line (score and rank) as server-sent events; 401 without
///   a token of ``LeaderboardConfiguration/tokens``.
///
/// Every request must name the server in `Host` (`localhost`, an IP address
/// or `configuration.host`), and a write must come from the server's own
/// page with a JSON body (``TrustedHostMiddleware``): another site's page,
/// even one whose name is rebound to 127.0.0.1, can neither read nor write.
///
/// - Parameter onServerRunning: called with the bound port once the server listens.
public func buildApplication(
    _ configuration: LeaderboardConfiguration,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws -> some ApplicationProtocol {
    let pool = try DatabasePool(path: configuration.databasePath)
    do {
        try await Migrator(directory: resourcePath("Migrations")).migrate(pool)
    } catch {
        await pool.close()
        throw error
    }
    let page = try Data(contentsOf: URL(fileURLWithPath: resourcePath("index.html")))

    let live = LiveQueries(pool, logger: configuration.logger)
    let router = Router(context: LeaderboardContext.self)
    // Before any route: DNS rebinding, cross-site WebSockets and cross-site writes.
    router.add(middleware: TrustedHostMiddleware(allowedHosts: [configuration.host]))
    // Gives requests with a known bearer token their viewer; the others go on without one.
    router.add(middleware: BearerTokenAuthenticator(tokens: configuration.tokens))
    router.get("/") { _, _ in
        Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: page)))
    }
    // The page's queries, on one connection per page: each commit that
    // changes them arrives as one batch, the leaderboard as keyed changes.
    live.addSyncRoutes(to: router) { subscription, _, _ in
        try syncQuery(for: subscription)
    }
    live.addJavaScriptClientRoute(to: router)
    router.get("leaderboard") { _, context in
        await live.current(TopPlayers(), context: context)
    }
    router.get("leaderboard/events") { request, context in
        live.events(TopPlayers(), for: request, context: context)
    }
    // The protected route: the viewer's own line, the viewer as the stream's
    // scope (viewers never share an observation), 401 without a viewer.
    router.get("me/events") { request, context in
        live.authenticatedEvents(for: request, context: context) { viewer in PlayerLine(name: viewer.name) }
    }
    router.ws("leaderboard/socket") { inbound, outbound, context in
        try await live.webSocket(TopPlayers.self, inbound: inbound, outbound: outbound, context: context)
    }
    router.post("players/:name/score") { request, context in
        do {
            let name = try context.parameters.require("name").removingPercentEncoding ?? ""
            guard (1...40).contains(name.count) else {
                throw LiveQueriesError.badRequest("a name has 1 to 40 characters")
            }
            let player = Player(
                name: name, score: try await request.decode(as: ScoreChange.self, context: context).score)
            try await pool.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO player (name, score) VALUES (?, ?)
                        ON CONFLICT (name) DO UPDATE SET score = excluded.score
                        """,
                    arguments: [player.name, player.score])
            }
            return try context.responseEncoder.encode(player, from: request, context: context)
        } catch {
            return live.errorResponse(error, logger: context.logger)
        }
    }

    return Application(
        router: router,
        server: .http1WebSocketUpgrade(webSocketRouter: router),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
        services: [live],  // stopped after the server: ends the streams, then closes the database
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: configuration.logger)
}

/// What a subscription of the sync protocol observes: `leaderboard`
/// (`limit`: 0 to 100, 10 by default) keyed by the players' names, or
/// `players`, whole.
func syncQuery(for subscription: SyncSubscription) throws -> SyncQuery {
    switch subscription.query {
    case "leaderboard":
        let limit = Int(subscription.params["limit"] ?? "10")
        guard let limit, (0...100).contains(limit) else {
            throw LiveQueriesError.badRequest("limit is an integer from 0 to 100")
        }
        return .identifiable(TopPlayers(limit: limit))
    case "players":
        return .wholeValues(PlayerCount())
    default:
        throw LiveQueriesError.unknownQuery(subscription.query)
    }
}

/// The body of `POST /players/:name/score`.
struct ScoreChange: Decodable {
    var score: Int
}

/// A file of the target's resources that is not where SwiftPM put it.
struct MissingResource: Error, CustomStringConvertible {
    var name: String
    var description: String { "missing resource \(name) in \(Bundle.module.bundlePath)" }
}

/// The path of a file or folder shipped in the target's resources.
private func resourcePath(_ name: String) throws -> String {
    guard let url = Bundle.module.url(forResource: name, withExtension: nil) else { throw MissingResource(name: name) }
    return url.path
}
