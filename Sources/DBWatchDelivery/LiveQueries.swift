import DBWatch
import Foundation
import Logging
import Synchronization

/// Serves live queries of one database to a server's clients: one-shot
/// JSON answers, server-sent events and WebSockets, through the adapter of
/// a server framework (`DBWatchHummingbird`, `DBWatchVapor`), which adds
/// the routes' methods and runs it with the server's lifecycle.
///
/// ```swift
/// let pool = try DatabasePool(path: "app.sqlite")
/// let live = LiveQueries(pool)
/// // Hummingbird: router.get("leaderboard/events") { request, context in live.events(TopPlayers(), for: request, context: context) }
/// //              Application(router: router, services: [live])
/// // Vapor:       app.get("leaderboard", "events") { request in live.events(TopPlayers(), for: request) }
/// //              app.lifecycle.use(live)
/// ```
///
/// - Clients of equal requests and scopes share one observation: one fetch
///   and one JSON encoding per change, the same bytes written to each.
/// - A client that disconnects ends its subscription at once; an
///   observation ends with its last client.
/// - A slow client has at most one pending value (latest wins); one whose
///   writes make no progress for ``LiveQueriesConfiguration/stalledClientTimeout``
///   is disconnected.
/// - Graceful shutdown ends each stream with a final `end` event, stops the
///   observations and closes the database (see
///   ``LiveQueriesConfiguration/closesDatabaseOnShutdown``).
///
/// ## The path of a value
///
/// From a commit to a client's socket (the core's part is mapped in
/// `ObservationCenter.swift`):
///
/// 1. Core: the commit's observation refetches; its driver compares the new
///    value with the last (for `Equatable` values) and hands it to the one
///    subscription of each shared observation.
/// 2. Shared observation (`LiveQueries+Sharing.swift`): one task per
///    distinct request and scope encodes the value once into a `Frame`
///    (`Frame.swift`), every transport's bytes at once, and offers it to each
///    client (`SharedObservation.swift`).
/// 3. Client (`ClientMailbox.swift`, its rules in
///    `ClientMailboxStateMachine.swift`): keeps at most one pending frame
///    (latest wins) and wakes the client's write loop, which runs in the
///    connection's own task.
/// 4. Adapter: the loop's `write` turns the frame into the framework's
///    buffer once for all clients (`Frame.wire`) and writes it to
///    the response body or the WebSocket (`EventStreamSession.swift`,
///    `WebSocketSession.swift` are what adapters drive).
///
/// The core shares step 1: a `LiveQuery` of the same request (and
/// observation options) in the server's background subscribes to the same
/// observation, and a change is fetched once for it and for every client.
/// `LiveQueries` does not go through `LiveQuery`, which hands typed values
/// to Swift loops; it needs encoded frames per request and scope.
///
/// Housekeeping (keep-alives, stalls) and shutdown are in
/// `LiveQueries+Lifecycle.swift`; one-shot answers and the one table of
/// error statuses in `LiveQueries+OneShot.swift` and `HTTPAnswer.swift`.
public final class LiveQueries: Sendable {
    enum Phase {
        case running
        case shuttingDown
        case stopped
    }

    struct State {
        var phase = Phase.running
        var observations: [SubscriptionKey: SharedObservation] = [:]
        var clients: [ObjectIdentifier: ClientMailbox] = [:]
        /// The shared observations of the sync protocol (`Sync/`), and its
        /// connections by session id.
        var syncFeeds: [SubscriptionKey: SyncFeed] = [:]
        var syncSessions: [String: SyncSession] = [:]
        var databaseClosed = false
        var databaseReplaced = false
        /// The server's graceful shutdown began (``endStreams()``): every
        /// stream, also one that starts now, is its final event alone.
        var streamsEnded = false
        /// The one task that waits for the server's graceful shutdown
        /// (``watchShutdown(_:)``), until ``shutDown()`` or deinit.
        var shutdownWatch: Task<Void, Never>?
    }

    /// The database served.
    ///
    /// ```swift
    /// try await live.database.write { db in try db.execute(sql: "UPDATE player SET score = score + 1") }
    /// ```
    public let database: any DatabaseWriter
    /// The delivery configuration.
    ///
    /// ```swift
    /// live.configuration.keepAliveInterval   // 15 s
    /// ```
    public let configuration: LiveQueriesConfiguration
    /// The logger of the live queries themselves (requests log with their own).
    ///
    /// ```swift
    /// live.logger.label
    /// ```
    public let logger: Logger

    let state = Locked(State())
    package let counters = LiveQueriesCounters()
    let versions = Atomic<UInt64>(0)
    /// The epoch of the sync protocol's positions: this server's history
    /// of the database, chosen at random when it starts, or the one the
    /// configuration gives (``LiveQueriesConfiguration/syncEpoch``).
    package let syncEpoch: String
    /// Whether positions of ``syncEpoch`` may come from another server
    /// (a configured epoch): a resume is then accepted only from a
    /// position at which this server knows the value (see `SyncSession`).
    package let sharesSyncEpoch: Bool

    /// Serves `database`.
    ///
    /// ```swift
    /// let live = LiveQueries(pool, configuration: LiveQueriesConfiguration(), logger: Logger(label: "live"))
    /// ```
    ///
    /// - Parameters:
    ///   - database: the database whose queries are served; closed after
    ///     graceful shutdown unless the configuration says not to.
    ///   - configuration: keep-alives, slow clients, shutdown.
    ///   - logger: for the live queries' own messages.
    public init(
        _ database: any DatabaseWriter,
        configuration: LiveQueriesConfiguration = LiveQueriesConfiguration(),
        logger: Logger = Logger(label: "DBWatchDelivery")
    ) {
        self.database = database
        self.configuration = configuration
        self.logger = logger
        syncEpoch = configuration.syncEpoch ?? SyncPosition.randomEpoch()
        sharesSyncEpoch = configuration.syncEpoch != nil
    }

    /// Stops the task waiting for the server's graceful shutdown, if one runs.
    deinit {
        state.withLock { $0.shutdownWatch.take() }?.cancel()
    }

    /// The counters: clients connected, values sent, fetches.
    ///
    /// ```swift
    /// let connected = live.statistics.clientsConnected
    /// ```
    public var statistics: LiveQueriesStatistics {
        counters.snapshot(observations: state.withLock { $0.observations.count + $0.syncFeeds.count })
    }

    /// Why a new client is refused, if it is.
    package func refusal() -> LiveQueriesError? {
        state.withLock { state in
            if state.phase != .running { return .shuttingDown }
            if state.databaseClosed { return .databaseClosed }
            if state.databaseReplaced { return .databaseReplaced }
            return nil
        }
    }

    /// Sorted keys: equal values encode to equal bytes, which the
    /// comparison with the previous value and `Last-Event-ID` rely on.
    static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// `value` as JSON, with sorted keys (an encoder per value: once per
    /// change of a shared observation, not per client).
    @Sendable package static func encodeJSON<V: Encodable>(_ value: V) throws -> [UInt8] {
        Array(try makeEncoder().encode(value))
    }

    /// The JSON of a value that writes its own.
    @Sendable package static func encodeOwnJSON<V: JSONEncodedValue>(_ value: V) throws -> [UInt8] {
        Array(try value.encodedJSON())
    }
}
