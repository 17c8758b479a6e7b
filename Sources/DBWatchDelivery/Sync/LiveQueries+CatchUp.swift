import DBWatch
import Foundation
import Logging

extension LiveQueries {
    /// The `Cache-Control` of a complete catch-up answer that any cache may
    /// keep: it never changes.
    package static let catchUpCompletePublic = "public, max-age=31536000, immutable"
    /// The `Cache-Control` of a complete catch-up answer that depends on who
    /// asks (a scoped query, a caller with credentials): the caller's cache only.
    package static let catchUpCompletePrivate = "private, max-age=31536000, immutable"

    /// The subscription a catch-up request names, and its `since`: the
    /// query `name` (the path's), with every query-string parameter but
    /// `since` (of a name given twice, the last).
    ///
    /// ```swift
    /// LiveQueries.catchUpRequest(name: "top", query: [("n", "3"), ("since", "e/7")])   // (top n=3, "e/7")
    /// ```
    package static func catchUpRequest(
        name: String, query: some Sequence<(name: String, value: String)>
    ) -> (subscription: SyncSubscription, since: String?) {
        var params: [String: String] = [:]
        var since: String?
        for (name, value) in query {
            if name == "since" { since = value } else { params[name] = value }
        }
        return (SyncSubscription(query: name, params: params), since)
    }

    /// Whether a catch-up answer is the same whoever asks, so that a
    /// shared cache may keep it: the route names no `owner`, and the
    /// request has no credentials (`Authorization`, `Cookie`; `header`
    /// reads a field by name).
    package static func catchUpIsShared(owner: (any Hashable & Sendable)?, header: (String) -> String?) -> Bool {
        owner == nil && header("Authorization") == nil && header("Cookie") == nil
    }

    /// The answer to a catch-up over plain HTTP (`GET /sync/queries/NAME?PARAMS&since=POSITION`,
    /// "Catching up over plain HTTP" in the sync protocol's reference): the
    /// keyed changes of `subscription` since `since`, in steps.
    ///
    /// Complete (it reaches `since + lowbit(since)`, a position the server
    /// has passed and whose value it knows): `Cache-Control` is
    /// ``catchUpCompletePublic`` when `shared` and the query has no scope,
    /// else ``catchUpCompletePrivate``. Otherwise it reaches the latest
    /// position the server knows the value at, with `no-store`, as every
    /// refusal: `400` for a missing or malformed `since`, the resolver's
    /// error (`404 unknownQuery`, `403`), `410 positionTooOld` for a position
    /// the history does not hold, of another epoch, later than the server's,
    /// or of a query without keys.
    ///
    /// A query no subscription observes gets a feed here, which lingers for
    /// ``LiveQueriesConfiguration/syncLinger`` after each catch-up: its
    /// history starts at its first fetch, so a `since` before it is `410`.
    ///
    /// - Parameters:
    ///   - subscription: The query name and its parameters (without `since`).
    ///   - since: The `since` parameter, as sent.
    ///   - shared: Whether the answer is the same whoever asks (no
    ///     credentials, no owner): then a shared cache may keep it.
    ///   - resolve: The resolver of sync subscriptions.
    package func syncCatchUp(
        _ subscription: SyncSubscription, since: String?, shared: Bool, logger: Logger,
        resolve: @Sendable (SyncSubscription) async throws -> SyncQuery
    ) async -> HTTPAnswer {
        do throws(LiveQueriesError) {
            guard let since, let position = SyncPosition(parsing: since) else {
                throw .badRequest("since must be a position EPOCH/SEQUENCE")
            }
            let query = try await resolveSyncQuery(subscription, with: resolve)
            guard position.epoch == syncEpoch else {
                throw .positionUnknown("the position is of another epoch: fetch the whole value")
            }
            guard position.sequence <= database.commitPosition else {
                throw .positionUnknown("the position is later than this server's: fetch the whole value")
            }
            let feed = try syncFeed(for: query, attaching: nil, logger: logger)
            await feed.firstFetch()
            let (answer, complete) = try catchUp(from: position.sequence, view: feed.view)
            var headers = [("Content-Type", HTTPAnswer.jsonContentType)]
            if complete {
                let cache = shared && query.key.scope == nil ? Self.catchUpCompletePublic : Self.catchUpCompletePrivate
                headers.append(("Cache-Control", cache))
            } else {
                headers.append(("Cache-Control", "no-store"))
            }
            return HTTPAnswer(status: 200, headers: headers, body: answer)
        } catch {
            var answer = syncRefusal(error)
            answer.headers.append(("Cache-Control", "no-store"))
            return answer
        }
    }

    /// The catch-up body from `since`, and whether it is complete.
    private func catchUp(from since: UInt64, view: SyncFeed.View) throws(LiveQueriesError) -> ([UInt8], Bool) {
        if let ended = view.ended { throw ended == .databaseReplaced ? .databaseReplaced : .databaseClosed }
        guard let current = view.current, view.failure == nil else {
            throw .positionUnknown("the query's latest fetch failed: no changes to catch up with")
        }
        guard current.value.rows != nil else {
            throw .positionUnknown("this query's values have no key: fetch the whole value")
        }
        // On an epoch shared with other servers, only a position whose value
        // this feed knows; on its own, any position the server passed (the
        // client got it from this server, as for a resume).
        if sharesSyncEpoch, !view.knowsValue(at: since) { throw .positionTooOld }
        // Read before the probe: every commit up to it is known to the probe.
        let database = database.commitPosition
        let currentUntil = min(view.validUntil, database &+ 1)
        // The end of a complete answer: since + lowbit(since).
        let (end, overflow) = since.addingReportingOverflow(since & (~since &+ 1))
        if since > 0, !overflow, end <= database,
            let between = view.history.between(
                since, end: end, current: current.position, currentKnown: view.lastPosition,
                currentUntil: currentUntil)
        {
            return (try catchUpJSON(between, position: end, complete: true), true)
        }
        // Incomplete: up to the latest position whose value is the current one.
        let latest = max(since, currentUntil &- 1)
        let between = view.history.between(since, current: current.position)
        return (try catchUpJSON(between, position: latest, complete: false), false)
    }

    /// `{"position": …, "complete": …, "steps": [changes, …]}`: nothing
    /// that differs between servers of one epoch besides the steps.
    private func catchUpJSON(
        _ between: SyncHistory.Between, position: UInt64, complete: Bool
    ) throws(LiveQueriesError) -> [UInt8] {
        let steps: [[UInt8]]
        switch between {
        case .upToDate: steps = []
        case .steps(let slice): steps = slice.compactMap(\.changes)
        case .tooOld: throw .positionTooOld
        case .reset: throw .positionUnknown("a change since the position has no keyed changes: fetch the whole value")
        }
        return SyncJSON.object([
            ("position", SyncJSON.string("\(syncEpoch)/\(position)")),
            ("complete", Array((complete ? "true" : "false").utf8)), ("steps", SyncJSON.array(steps)),
        ])
    }
}
