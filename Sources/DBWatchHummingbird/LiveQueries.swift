import DBWatch
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// Serves live queries of one database to a Hummingbird server's clients:
/// one-shot JSON answers, server-sent events and WebSockets. A
/// ServiceLifecycle `Service`: add it to the application's services.
///
/// ```swift
/// let pool = try DatabasePool(path: "app.sqlite")
/// let live = LiveQueries(pool)
/// let router = Router()
/// router.get("leaderboard") { _, context in await live.current(TopPlayers(), context: context) }
/// router.get("leaderboard/events") { request, context in
///     live.events(TopPlayers(), for: request, context: context)
/// }
/// let app = Application(router: router, services: [live])
/// try await app.runService()
/// ```
///
/// - Clients of equal requests and scopes share one observation: one fetch
///   and one JSON encoding per change, the same bytes written to each.
/// - A client that disconnects ends its subscription at once; an
///   observation ends with its last client.
/// - A slow client has at most one pending value (latest wins); one whose
///   writes make no progress for ``LiveQueriesConfiguration/stalledClientTimeout``
///   is disconnected.
///
/// Shutdown order. Hummingbird's `Application` shuts its services down in
/// reverse order: the HTTP server first, then the services listed in
/// `services:`. On graceful shutdown each stream ends at once with a final
/// `event: end` (its connection task sees the shutdown), so the server does
/// not wait for open streams; then ``run()`` ends the streams that remain,
/// stops the observations and closes the database (see
/// ``LiveQueriesConfiguration/closesDatabaseOnShutdown``). Keep-alives and
/// stall detection run in ``run()``: without it, streams still work but get
/// neither.
public final class LiveQueries: Service, Sendable {
    private enum Phase {
        case running
        case shuttingDown
        case stopped
    }

    private struct State {
        var phase = Phase.running
        var observations: [SharingKey: SharedObservation] = [:]
        var clients: [ObjectIdentifier: ClientMailbox] = [:]
        var databaseClosed = false
        var databaseReplaced = false
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
    /// The logger of the service itself (requests log with their own).
    ///
    /// ```swift
    /// live.logger.label
    /// ```
    public let logger: Logger

    private let state = Locked(State())
    let counters = LiveQueriesCounters()
    private let versions = Atomic<UInt64>(0)

    /// Serves `database`.
    ///
    /// ```swift
    /// let live = LiveQueries(pool, configuration: LiveQueriesConfiguration(), logger: Logger(label: "live"))
    /// ```
    ///
    /// - Parameters:
    ///   - database: the database whose queries are served; closed by
    ///     ``run()`` after graceful shutdown unless the configuration says not to.
    ///   - configuration: keep-alives, slow clients, shutdown.
    ///   - logger: for the service's own messages.
    public init(
        _ database: any DatabaseWriter,
        configuration: LiveQueriesConfiguration = LiveQueriesConfiguration(),
        logger: Logger = Logger(label: "DBWatchHummingbird")
    ) {
        self.database = database
        self.configuration = configuration
        self.logger = logger
    }

    /// The counters: clients connected, values sent, fetches.
    ///
    /// ```swift
    /// let connected = live.statistics.clientsConnected
    /// ```
    public var statistics: LiveQueriesStatistics {
        counters.snapshot(observations: state.withLock { $0.observations.count })
    }

    /// How long the oldest write to a client has been waiting for its
    /// socket, if one is in progress: tests tell a client whose socket is
    /// full from one that is only slow to be scheduled.
    func longestWriteInProgress(now: ContinuousClock.Instant = .now) -> Duration? {
        let clients = state.withLock { Array($0.clients.values) }
        return clients.compactMap { $0.writeInProgress(now: now) }.max()
    }

    // MARK: - Service

    /// Runs keep-alives and stall detection until graceful shutdown or
    /// cancellation; then ends every stream with a final event, stops the
    /// observations and closes the database.
    ///
    /// ```swift
    /// let app = Application(router: router, services: [live])   // runs it, after the server on shutdown
    /// ```
    public func run() async throws {
        let interval = configuration.housekeepingInterval
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { break }
                housekeep()
            }
        }
        await shutDown()
    }

    /// One pass over the clients: keep-alives, stalls, shutdown grace.
    private func housekeep() {
        let clients = state.withLock { Array($0.clients.values) }
        let now = ContinuousClock.now
        for client in clients where client.housekeep(now: now, configuration: configuration) {
            counters.clientsStalled.add(1, ordering: .relaxed)
            logger.info("Disconnecting a live query client that made no progress")
        }
    }

    private func shutDown() async {
        let (clients, observations) = state.withLock { state in
            state.phase = .shuttingDown
            return (Array(state.clients.values), Array(state.observations.values))
        }
        for client in clients { client.finish(.shutdown) }
        // Streams blocked on a client that does not read get the grace period.
        let deadline = ContinuousClock.now + configuration.shutdownWriteGrace
        while counters.clientsConnected.load(ordering: .relaxed) > 0, ContinuousClock.now < deadline,
            !Task.isCancelled
        {
            try? await Task.sleep(for: configuration.housekeepingInterval)
        }
        for client in state.withLock({ Array($0.clients.values) }) { client.kill() }
        for observation in observations {
            if let task = observation.takeTask() {
                task.cancel()
                await task.value
            }
        }
        if configuration.closesDatabaseOnShutdown {
            await closeDatabase()
        }
        state.withLock { $0.phase = .stopped }
        logger.debug("Live queries stopped")
    }

    /// The async `close()`: the blocking close runs on a thread of the
    /// core's, not on a cooperative one.
    private func closeDatabase() async {
        await database.close()
        state.withLock { $0.databaseClosed = true }
    }

    // MARK: - One-shot

    /// The current value of `request` as a JSON answer, or an error answer
    /// with its status: 400 for bad parameters (and a value the SQL cannot
    /// take, `SQLITE_MISMATCH`), 503 (with `Retry-After`)
    /// when the database is busy or locked, 409 for a constraint, 507 for a
    /// full disk, 503 when the database is closed, its file was replaced or
    /// the server shuts down.
    ///
    /// ```swift
    /// router.get("leaderboard") { _, context in await live.current(TopPlayers(), context: context) }
    /// ```
    public func current<R: Queryable>(_ request: R, context: some RequestContext) async -> Response
    where R.Value: Encodable {
        await current(request, context: context, encode: Self.encodeJSON)
    }

    /// The current value of `request` as a JSON answer, the value writing
    /// its own JSON (see ``JSONEncodedValue``); statuses as for an
    /// `Encodable` value.
    ///
    /// ```swift
    /// router.get("rows") { _, context in await live.current(RowsQuery(), context: context) }
    /// ```
    public func current<R: Queryable>(_ request: R, context: some RequestContext) async -> Response
    where R.Value: JSONEncodedValue {
        await current(request, context: context, encode: { try $0.encodedJSON() })
    }

    private func current<R: Queryable>(
        _ request: R, context: some RequestContext, encode: @Sendable (R.Value) throws -> Data
    ) async -> Response {
        do {
            if let refusal = refusal() { throw refusal }
            // A connection opened before the file was replaced or deleted
            // still reads the old file: its value is not the database's.
            // (One stat per answer; streams learn it from their observation.)
            let (value, moved) = try await database.read { db in (try request.fetch(db), db.mainFileHasMoved) }
            counters.fetches.add(1, ordering: .relaxed)
            if moved {
                state.withLock { $0.databaseReplaced = true }
                throw LiveQueryError.databaseReplaced
            }
            let json = try encode(value)
            return Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
        } catch {
            return errorResponse(error, request: request, logger: context.logger)
        }
    }

    /// Why a new client is refused, if it is.
    func refusal() -> LiveQueryError? {
        state.withLock { state in
            if state.phase != .running { return .shuttingDown }
            if state.databaseClosed { return .databaseClosed }
            if state.databaseReplaced { return .databaseReplaced }
            return nil
        }
    }

    /// An error answer: the status for `error`, a JSON body `{message, code}`.
    ///
    /// ```swift
    /// router.get("player/:id") { request, context in
    ///     do { … } catch { return live.errorResponse(error, logger: context.logger) }
    /// }
    /// ```
    public func errorResponse(_ error: any Error, logger: Logger) -> Response {
        errorResponse(error, request: nil as Int?, logger: logger)
    }

    func errorResponse(_ error: any Error, request: (some Sendable)?, logger: Logger) -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        var body = ErrorBody(error)
        let status: HTTPResponse.Status
        if let error = error as? LiveQueryError {
            status = error.status
            if error.isRetryable { headers[.retryAfter] = "\(configuration.retryAfterSeconds)" }
        } else if error is DecodingError {
            status = .badRequest
        } else if error is DatabaseFileReplacedError {
            status = .serviceUnavailable
        } else if let error = error as? any HTTPResponseError {
            status = error.status
            body = ErrorBody(message: "\(error)", code: nil)
        } else if let error = error as? SQLiteError {
            if error.isDatabaseClosed {
                status = .serviceUnavailable
            } else if error.isBusyOrLocked {
                status = .serviceUnavailable
                headers[.retryAfter] = "\(configuration.retryAfterSeconds)"
            } else if error.isConstraintViolation {
                status = .conflict
            } else if error.primaryCode == .mismatch {
                // A value of the request's parameters that the SQL cannot
                // take (`LIMIT 'abc'`): the client's, like a decoding error.
                status = .badRequest
            } else if error.isDiskFull {
                status = HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
            } else {
                status = .internalServerError
            }
        } else {
            status = .internalServerError
            body = ErrorBody(message: "internal error", code: nil)
        }
        if status.code >= 500 {
            logger.warning(
                "Live query failed", metadata: ["request": "\(request.map { "\($0)" } ?? "-")", "error": "\(error)"])
        } else {
            logger.debug("Live query refused", metadata: ["request": "\(request.map { "\($0)" } ?? "-")"])
        }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body.json))
    }

    // MARK: - Sharing

    /// Whether a stream of `request` in `scope` would be refused now: the
    /// answer before a stream starts (``subscribe(_:to:scope:logger:encode:)``
    /// decides again, under the same lock, when it starts).
    func admission(of request: some Queryable, scope: (any Hashable & Sendable)?) -> LiveQueryError? {
        if let refusal = refusal() { return refusal }
        let key = SharingKey(request: AnyHashable(request), scope: scope.map { AnyHashable($0) })
        let refused: LiveQueryError? = state.withLock { state in
            if let observation = state.observations[key], !observation.isFinished { return nil }
            return state.observations.count < configuration.maxObservations ? nil : .tooManyObservations
        }
        if refused != nil { counters.observationsRefused.add(1, ordering: .relaxed) }
        return refused
    }

    /// Subscribes `client` to the shared observation of `request` in
    /// `scope`, starting it for the first client; throws
    /// ``LiveQueryError/tooManyObservations`` when that would make more than
    /// ``LiveQueriesConfiguration/maxObservations``. An observation the
    /// client is about to leave (`replacing`, a WebSocket's previous
    /// request), of which it is the only client, does not count.
    func subscribe<R: Queryable>(
        _ client: ClientMailbox, to request: R, scope: (any Hashable & Sendable)?, logger: Logger,
        replacing previous: SharedObservation? = nil, encode: @escaping @Sendable (R.Value) throws -> Data
    ) throws(LiveQueryError) -> SharedObservation {
        let key = SharingKey(request: AnyHashable(request), scope: scope.map { AnyHashable($0) })
        // Attached under the registry's lock: the last client of a shared
        // observation cannot remove it between the lookup and the attach.
        let attached: (SharedObservation, Bool, (Frame?, ClientMailbox.Finish?))? = state.withLock { state in
            if let observation = state.observations[key], !observation.isFinished {
                return (observation, false, observation.attach(client))
            }
            // A finished observation still listed is replaced: it does not count twice.
            var others = state.observations.count - (state.observations[key] == nil ? 0 : 1)
            if let previous, state.observations[previous.key] === previous, previous.hasOnly(client) { others -= 1 }
            guard others < configuration.maxObservations else { return nil }
            let observation = SharedObservation(key: key)
            state.observations[key] = observation
            return (observation, true, observation.attach(client))
        }
        guard let attached else {
            counters.observationsRefused.add(1, ordering: .relaxed)
            throw .tooManyObservations
        }
        let (observation, isNew, initial) = attached
        observation.deliver(initial, to: client)
        if isNew {
            observation.setTask(
                Task { [self] in await observe(request, sharedBy: observation, logger: logger, encode: encode) })
        }
        return observation
    }

    /// Unsubscribes `client`; the last client stops the observation.
    func unsubscribe(_ client: ClientMailbox, from observation: SharedObservation) {
        let task: Task<Void, Never>? = state.withLock { state in
            let task = observation.remove(client)
            if observation.isEmpty, state.observations[observation.key] === observation {
                state.observations[observation.key] = nil
            }
            return task
        }
        task?.cancel()
    }

    func register(_ client: ClientMailbox) -> Bool {
        let registered = state.withLock { state in
            guard state.phase == .running else { return false }
            state.clients[ObjectIdentifier(client)] = client
            return true
        }
        if registered { counters.clientsConnected.add(1, ordering: .relaxed) }
        return registered
    }

    func unregister(_ client: ClientMailbox) {
        let removed = state.withLock { $0.clients.removeValue(forKey: ObjectIdentifier(client)) != nil }
        if removed { counters.clientsConnected.subtract(1, ordering: .relaxed) }
    }

    /// The shared observation: fetch, encode once, publish to every client.
    private func observe<R: Queryable>(
        _ request: R, sharedBy shared: SharedObservation, logger: Logger,
        encode: @Sendable (R.Value) throws -> Data
    ) async {
        var previous: Data?
        for await result in database.observe(request, options: configuration.observationOptions).results {
            counters.fetches.add(1, ordering: .relaxed)
            switch result {
            case .success(let value):
                let json: Data
                do {
                    json = try encode(value)
                } catch {
                    logger.warning(
                        "Live query value could not be encoded",
                        metadata: ["request": "\(request)", "error": "\(error)"])
                    previous = nil
                    publish(.error(ErrorBody(message: "the value could not be encoded", code: nil)), to: shared)
                    continue
                }
                if json == previous { continue }
                previous = json
                let version = versions.add(1, ordering: .relaxed).newValue
                publish(.value(json: ByteBuffer(bytes: json), version: version), to: shared)
            case .failure(let error):
                if (error as? SQLiteError)?.isDatabaseClosed == true {
                    state.withLock { $0.databaseClosed = true }
                    publish(.error(ErrorBody(error)), to: shared)
                    shared.finishAll(.databaseClosed)
                    return
                }
                if error is DatabaseFileReplacedError {
                    // Every later fetch would read the old file or fail:
                    // the streams end, new clients are refused.
                    state.withLock { $0.databaseReplaced = true }
                    publish(.error(ErrorBody(error)), to: shared)
                    shared.finishAll(.databaseReplaced)
                    return
                }
                if Task.isCancelled { return }
                // Not logged here: the core logs a failing observation at
                // warning level with the request's description (once per
                // failure, and its recovery), through the database's logger.
                previous = nil
                publish(.error(ErrorBody(error)), to: shared)
            }
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
    @Sendable static func encodeJSON<V: Encodable>(_ value: V) throws -> Data {
        try makeEncoder().encode(value)
    }

    private func publish(_ frame: Frame, to shared: SharedObservation) {
        let replaced = shared.publish(frame)
        if replaced > 0 { counters.valuesSkipped.add(replaced, ordering: .relaxed) }
    }
}
