import DBWatch
import DBWatchDelivery
import DBWatchTestSupport
import Logging

/// A running server of one adapter (Hummingbird, Vapor) on 127.0.0.1 with
/// an ephemeral port, its `LiveQueries` over a database with
/// ``testSchema``, serving the same routes whatever the adapter:
///
/// - `GET /top?limit=N`: the current `TopPlayers` as JSON; a negative limit
///   is a 400 in the one JSON error shape
/// - `GET /refused`: a route that throws `LiveQueriesError.forbidden`
/// - `GET /top/events?limit=N&scope=S`, `GET /checked/events`,
///   `GET /big/events`: server-sent events
/// - `GET /hand`, `GET /hand/events`: a value that writes its own JSON
/// - `POST /players/:name/:score`: a write; an existing name is a
///   constraint error (409)
/// - `/top/socket`: a WebSocket whose client sends `TopPlayers` as JSON
/// - `/big/socket`: a WebSocket of `BigText` (the client sends a `TodoFilter`)
/// - `/todos/socket`: the `X-User` header's todos (the client sends a
///   `TodoFilter`); `/todos/checked/socket`: the client sends `Todos`
///   whole, refused unless its owner is the `X-User`
///
/// ```swift
/// try await Adapter.vapor.withServer { server in
///     let answer = try await fetch("\(server.baseURL)/top?limit=1")
/// }
/// ```
public protocol AdapterServer: Sendable {
    /// The port the server listens on, on 127.0.0.1.
    var port: Int { get }
    /// The live queries the routes serve.
    var live: LiveQueries { get }
    /// The database of the live queries.
    var database: any DatabaseWriter { get }
    /// Shuts the server down gracefully (once), as its framework does on
    /// SIGTERM, and waits until it has.
    func shutDown() async throws
}

extension AdapterServer {
    /// `http://127.0.0.1:port`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }
}

/// The framework adapters of `LiveQueries` that this build has: Hummingbird
/// with the trait `Hummingbird`, Vapor with the trait `Vapor`. A behaviour
/// both must share is one test that takes the adapter as its argument:
///
/// ```swift
/// @Test(arguments: Adapter.available)
/// func currentValueAsJSON(adapter: Adapter) async throws {
///     try await adapter.withServer { server in … }
/// }
/// ```
public enum Adapter: CaseIterable, Sendable, CustomStringConvertible {
    #if Hummingbird
        /// `DBWatchHummingbird`, served by ``HummingbirdServer``.
        case hummingbird
    #endif
    #if Vapor
        /// `DBWatchVapor`, served by ``VaporServer``.
        case vapor
    #endif

    /// Every adapter of this build.
    public static var available: [Adapter] { allCases }

    public var description: String {
        switch self {
        #if Hummingbird
            case .hummingbird: "Hummingbird"
        #endif
        #if Vapor
            case .vapor: "Vapor"
        #endif
        }
    }

    /// The longest a graceful shutdown may take with the test
    /// configuration when the adapter does its part. Vapor waits 10 s for
    /// the connections still open, then closes them itself: a shutdown of
    /// 8 s or more did not close them. Hummingbird waits for them without
    /// end (a step then times out), and the slow paths it could otherwise
    /// take (the 30 s keep-alive and stall timeouts) are far above 25 s,
    /// which leaves room for a loaded machine.
    public var promptShutdownLimit: Duration {
        switch self {
        #if Hummingbird
            case .hummingbird: .seconds(25)
        #endif
        #if Vapor
            case .vapor: .seconds(8)
        #endif
        }
    }

    /// Runs `body` against a new server of this adapter (see
    /// ``AdapterServer``), then shuts it down gracefully.
    ///
    /// - Parameters:
    ///   - kind: the database's kind.
    ///   - configuration: the live queries' settings.
    ///   - logs: where the server's and the database's logs go (else they
    ///     are dropped below error level).
    ///   - detectsExternalChanges: whether the database polls for other
    ///     processes' commits and a replaced file.
    ///   - body: the test, given the running server.
    public func withServer<T: Sendable>(
        kind: DatabaseKind = .inMemory,
        configuration: LiveQueriesConfiguration = testConfiguration(),
        logs: LogRecorder? = nil,
        detectsExternalChanges: Bool = false,
        _ body: @Sendable (any AdapterServer) async throws -> T
    ) async throws -> T {
        switch self {
        #if Hummingbird
            case .hummingbird:
                try await HummingbirdServer.with(
                    kind: kind, configuration: configuration, logs: logs,
                    detectsExternalChanges: detectsExternalChanges
                ) { try await body($0) }
        #endif
        #if Vapor
            case .vapor:
                try await VaporServer.with(
                    kind: kind, configuration: configuration, logs: logs,
                    detectsExternalChanges: detectsExternalChanges
                ) { try await body($0) }
        #endif
        }
    }
}

/// The sync queries of a test server of either adapter: `top` (keyed, the
/// leaderboard of `n` players, 10 by default), `count` (whole values).
func syncQuery(_ subscription: SyncSubscription) throws -> SyncQuery {
    switch subscription.query {
    case "top":
        guard let limit = Int(subscription.params["n"] ?? "10"), limit >= 0 else {
            throw LiveQueriesError.badRequest("n must be a non-negative integer")
        }
        return .identifiable(Leaderboard(limit: limit))
    case "count": return .wholeValues(PlayerCount())
    default: throw LiveQueriesError.unknownQuery(subscription.query)
    }
}

/// Delivery settings short enough for tests.
public func testConfiguration() -> LiveQueriesConfiguration {
    var configuration = LiveQueriesConfiguration()
    configuration.keepAliveInterval = .seconds(30)
    configuration.stalledClientTimeout = .seconds(30)
    configuration.shutdownWriteGrace = .milliseconds(500)
    return configuration
}

/// What a test server of either adapter starts from: the logger of the
/// server labelled `label` and the live queries of a new database of
/// `kind`. Without `logs`, both log only errors.
func makeTestLiveQueries(
    label: String, kind: DatabaseKind, configuration: LiveQueriesConfiguration, logs: LogRecorder?,
    detectsExternalChanges: Bool
) async throws -> (LiveQueries, logger: Logger) {
    var logger = logs?.logger(label: label) ?? Logger(label: label)
    if logs == nil { logger.logLevel = .error }
    var databaseLogger = logs?.logger(label: "dbwatch") ?? Logger(label: "dbwatch")
    if logs == nil { databaseLogger.logLevel = .error }
    let database = try await kind.makeDatabase(logger: databaseLogger, detectsExternalChanges: detectsExternalChanges)
    return (LiveQueries(database, configuration: configuration, logger: logger), logger)
}
