import DBWatch
import Foundation
import Logging

extension LiveQueries {
    // MARK: - Connections

    /// Decides on a sync connection: refused with an error answer (the
    /// server shuts down, the database is closed), or a session whose
    /// ``SyncSession/run(write:)`` an adapter drives over server-sent events
    /// or a WebSocket. `owner` is who opens it (a token's subject, a user
    /// id): a message posted for it must come from the same. `resolve`
    /// turns each subscription into a ``SyncQuery``, or throws (a
    /// ``LiveQueriesError`` such as ``LiveQueriesError/unknownQuery(_:)``,
    /// or any error: then a 400).
    package func syncSession(
        transport: Transport, owner: SyncOwner, logger: Logger,
        resolve: @escaping @Sendable (SyncSubscription) async throws -> SyncQuery
    ) -> Result<SyncSession, LiveQueriesError> {
        if let refusal = refusal() { return .failure(refusal) }
        return .success(SyncSession(live: self, transport: transport, owner: owner, logger: logger, resolve: resolve))
    }

    /// A message posted for the session `id` (`POST /sync/ID`): handled by
    /// that session when it exists and `owner` opened it.
    package func receiveSyncMessage(
        _ json: Data, session id: String, owner: SyncOwner
    ) async throws(LiveQueriesError) {
        guard let session = state.withLock({ $0.syncSessions[id] }), session.owner == owner else {
            throw .unknownSession
        }
        try await session.receive(json)
    }

    func addSyncSession(_ session: SyncSession) {
        state.withLock { $0.syncSessions[session.id] = session }
    }

    func removeSyncSession(_ session: SyncSession) {
        state.withLock { state in
            if state.syncSessions[session.id] === session { state.syncSessions[session.id] = nil }
        }
    }

    /// The query an application's resolver gives for `subscription`: its
    /// ``LiveQueriesError`` as it is, any other error as a `400`.
    func resolveSyncQuery(
        _ subscription: SyncSubscription, with resolve: (SyncSubscription) async throws -> SyncQuery
    ) async throws(LiveQueriesError) -> SyncQuery {
        do {
            return try await resolve(subscription)
        } catch let error as LiveQueriesError {
            throw error
        } catch {
            throw .badRequest(ErrorBody(refusal: error).message)
        }
    }

    // MARK: - Feeds

    /// The running feed of `query`, or a new one, with `session` attached
    /// under the registry's lock (so that an idle feed cannot stop in
    /// between); throws ``LiveQueriesError/tooManyObservations`` when that
    /// would make more observations than
    /// ``LiveQueriesConfiguration/maxObservations``. At that limit, the feed
    /// that no client has used for the longest (one that lingers, see
    /// ``LiveQueriesConfiguration/syncLinger``) stops to make room for a
    /// subscription: a lingering feed never refuses a subscription. A
    /// catch-up request (without a session) makes room only among the
    /// feeds that catch-ups alone used, and is refused if there is none.
    /// For one, a feed no session uses is idle from now: it
    /// lingers for ``LiveQueriesConfiguration/syncLinger``, so that the
    /// next catch-up finds its history.
    func syncFeed(
        for query: SyncQuery, attaching session: SyncSession?, logger: Logger
    ) throws(LiveQueriesError) -> SyncFeed {
        if let refusal = refusal() { throw refusal }
        let now = ContinuousClock.now
        var evicted: SyncFeed?
        defer { _ = evicted?.stop() }
        let found: (SyncFeed, isNew: Bool, isIdle: Bool)? = state.withLock { state in
            if let feed = state.syncFeeds[query.key], !feed.isEnded {
                guard let session else { return (feed, false, feed.touch(now: now)) }
                feed.attach(session)
                return (feed, false, false)
            }
            let others = state.observations.count + state.syncFeeds.count - (state.syncFeeds[query.key] == nil ? 0 : 1)
            if others >= configuration.maxObservations {
                // A catch-up pushes out only a feed that catch-ups alone
                // used: with ever new parameters it would otherwise push
                // out every history returning clients resume from.
                let lingering = state.syncFeeds.values.compactMap { feed in
                    session != nil || !feed.hadSessions ? feed.idleSince.map { (feed, $0) } : nil
                }
                // The oldest that is still idle when it is marked stopped.
                guard let oldest = lingering.sorted(by: { $0.1 < $1.1 }).first(where: { $0.0.retireIfIdle() })?.0
                else { return nil }
                state.syncFeeds[oldest.key] = nil
                evicted = oldest
            }
            let feed = SyncFeed(key: query.key, name: query.name, historyLimit: configuration.syncHistoryBytes)
            state.syncFeeds[query.key] = feed
            guard let session else { return (feed, true, feed.touch(now: now)) }
            feed.attach(session)
            return (feed, true, false)
        }
        guard let (feed, isNew, isIdle) = found else {
            counters.observationsRefused.add(1, ordering: .relaxed)
            throw .tooManyObservations
        }
        if isNew {
            feed.setTask(Task { [self] in await query.run(self, feed) })
            logger.debug("Sync query observed", metadata: [LogKey.request: "\(query.name)"])
        }
        if isIdle { stopAfterLinger(feed) }
        return feed
    }

    /// A session left `feed`: once no session uses it for
    /// ``LiveQueriesConfiguration/syncLinger``, it stops.
    func detach(_ session: SyncSession, from feed: SyncFeed) {
        guard feed.detach(session, now: .now) else { return }
        stopAfterLinger(feed)
    }

    /// Stops `feed` after ``LiveQueriesConfiguration/syncLinger`` if no
    /// session or catch-up used it meanwhile.
    private func stopAfterLinger(_ feed: SyncFeed) {
        let linger = configuration.syncLinger
        Task { [weak self, weak feed] in
            try? await Task.sleep(for: linger)
            guard let self, let feed else { return }
            self.stopIfIdle(feed, since: .now - linger)
        }
    }

    /// Stops `feed` when no session used it since `deadline`.
    private func stopIfIdle(_ feed: SyncFeed, since deadline: ContinuousClock.Instant) {
        let stopped = state.withLock { state -> Bool in
            guard state.syncFeeds[feed.key] === feed, feed.retireIfIdle(before: deadline + .milliseconds(1)) else {
                return false
            }
            state.syncFeeds[feed.key] = nil
            return true
        }
        if stopped { _ = feed.stop() }
    }

    /// A feed ended because the database closed or its file was replaced:
    /// new clients are refused, as for whole-value streams.
    func syncFeedDidEnd(_ reason: ClientFinish) {
        state.withLock { state in
            switch reason {
            case .databaseClosed: state.databaseClosed = true
            case .databaseReplaced: state.databaseReplaced = true
            default: break
            }
        }
    }

    /// Stops every feed (graceful shutdown), waiting for their tasks.
    func stopSyncFeeds() async {
        let feeds = state.withLock { state in
            defer { state.syncFeeds = [:] }
            return Array(state.syncFeeds.values)
        }
        for feed in feeds { await feed.stop()?.value }
    }
}

extension LiveQueries {
    /// The answer to a refused sync request: the error's status, and the
    /// one error body with the protocol's `reason`.
    package func syncRefusal(_ error: LiveQueriesError) -> HTTPAnswer {
        var answer = HTTPAnswer.json(
            SyncSession.errorJSON(ErrorBody(error), reason: error.reason), status: error.httpStatus)
        if error.isRetryable { answer.headers.append(("Retry-After", "\(configuration.retryAfterSeconds)")) }
        return answer
    }

    /// The answer to an accepted `POST /sync/ID`.
    package static var syncAccepted: HTTPAnswer { HTTPAnswer(status: 202, headers: [], body: []) }

    /// The longest client message a sync connection takes, in bytes: the
    /// body of `POST /sync/ID`, or a WebSocket message.
    package static let maximumSyncMessageBytes = 64 * 1024

    /// The answer to a `POST /sync/ID` whose body is longer than
    /// ``maximumSyncMessageBytes``: `400`, the whole body refused.
    package func syncMessageTooLong() -> HTTPAnswer {
        syncRefusal(.badRequest("the message is longer than 64 KiB"))
    }
}
