import DBWatch
import Foundation
import Logging

/// One connection of the sync protocol: its subscriptions, the position of
/// the last batch it sent, and its write loop (a ``ClientMailbox``, so that
/// keep-alives, stalls and shutdown work as for every stream).
///
/// It never queues batches. When one of its feeds moves, it wakes its
/// write loop; when the loop can write, the session composes **one** batch
/// at a position at which every subscription's value is known
/// (``SyncFeed/View/validUntil``), holding what changed since what the
/// client holds: one feed step as `changes`, several as `catchUp`, or a
/// `snapshot` when the history no longer holds them. So a client that
/// reads slowly receives fewer, larger batches, and the server holds
/// nothing per batch.
/// Who opened a sync session (an adapter's principal: a token's subject,
/// a user id, or nobody): a message posted for the session must come from
/// the same.
package struct SyncOwner: Hashable, @unchecked Sendable {  // built only from a Sendable value
    let value: AnyHashable?

    package init(_ value: (any Hashable & Sendable)?) {
        self.value = value.map { AnyHashable($0) }
    }
}

package final class SyncSession: Sendable {
    /// What a client holds of one subscription.
    enum Held: Sendable {
        /// Nothing: it subscribed without a position.
        case nothing
        /// The value as of the position it subscribed with, if that is a
        /// position of this server (`nil`: another epoch, or later than
        /// this server's last commit).
        case resuming(from: UInt64?)
        /// The feed's value at this position.
        case value(at: UInt64)
    }

    /// One subscription: its `var`s are touched only under the session's
    /// lock (its `let`s are read anywhere). A class:
    /// composing a batch reads every subscription, and a reference costs
    /// one retain to read where a struct of views costs a dozen.
    final class Subscription {
        let id: String
        let feed: SyncFeed
        let mode: SyncMode
        var held: Held
        /// Batches wait for its first value (or error): its client shows
        /// the other subscriptions at the position it resumes from, or it
        /// came with others in one array, and they enter one batch.
        let holdsBatches: Bool
        /// The generation of the last failure sent (see ``SyncFeed/Failure``).
        var failureSent = 0
        /// Its feed's view as of the feed's last move: read again only when
        /// the feed moves, so that composing a batch costs a load per
        /// subscription held, not a lock.
        private(set) var view: SyncFeed.View
        // What composing a batch reads of every subscription, kept here
        // so that it reads this object and its driver's mark, no more.
        /// The view's position of the value (`nil`: none yet).
        private(set) var currentPosition: UInt64?
        /// The view's last position the value is known at.
        private(set) var lastPosition: UInt64 = 0
        /// Its last fetch failed.
        private(set) var isFailing = false
        /// Its driver's record of the last commit that touched it.
        private(set) var mark: TouchedMark?

        init(id: String, feed: SyncFeed, mode: SyncMode, held: Held, holdsBatches: Bool) {
            self.id = id
            self.feed = feed
            self.mode = mode
            self.held = held
            self.holdsBatches = holdsBatches
            view = feed.view
            refresh(view)
        }

        func refresh(_ view: SyncFeed.View) {
            self.view = view
            currentPosition = view.current?.position
            lastPosition = view.lastPosition
            isFailing = view.failure != nil
            mark = view.probe?.mark
        }

        /// Whether its value is the value at `target` (at or after its last
        /// position): untouched since, by its mark, or by the center's log.
        func isValid(at target: UInt64) -> Bool {
            if lastPosition >= target { return true }
            if let mark, mark.value <= lastPosition { return true }
            return view.validUntil > target
        }
    }

    private struct State {
        var subscriptions: [String: Subscription] = [:]
        /// The position of the last batch (or of `hello`).
        var position: UInt64
        var isClosed = false
        /// Error messages to write before the next batch, oldest first (at
        /// most ``maximumPendingErrors``: a client that sends faster than it
        /// reads loses the oldest).
        var errors: [Frame] = []
        /// Arrays of client messages being handled: no batch meanwhile.
        var receiving = 0
        /// The ids of the subscriptions of each feed.
        var idsByFeed: [ObjectIdentifier: [String]] = [:]
        /// The subscriptions, to read them all in a row.
        var list: [Subscription] = []
        /// The latest last position of any view read: the position of the
        /// next batch (with `position`).
        var latestKnown: UInt64 = 0

        /// Whether a subscription uses `feed`.
        func uses(_ feed: SyncFeed) -> Bool {
            idsByFeed[ObjectIdentifier(feed)] != nil
        }

        mutating func add(_ subscription: Subscription) {
            subscriptions[subscription.id] = subscription
            idsByFeed[ObjectIdentifier(subscription.feed), default: []].append(subscription.id)
            list.append(subscription)
            latestKnown = max(latestKnown, subscription.lastPosition)
        }

        /// Removes subscription `id`; returns its feed if no other
        /// subscription uses it (the session leaves the feed).
        mutating func remove(_ id: String) -> SyncFeed? {
            guard let removed = subscriptions.removeValue(forKey: id) else { return nil }
            list.removeAll { $0 === removed }
            let feed = ObjectIdentifier(removed.feed)
            idsByFeed[feed]?.removeAll { $0 == id }
            guard idsByFeed[feed]?.isEmpty ?? true else { return nil }
            idsByFeed[feed] = nil
            return removed.feed
        }
    }

    /// The error messages a session keeps for its client at most.
    static let maximumPendingErrors = 16

    /// The head of a sync connection over server-sent events.
    package static var eventStreamHeaders: [(name: String, value: String)] {
        [("Content-Type", "text/event-stream"), ("Cache-Control", "no-store"), ("X-Accel-Buffering", "no")]
    }

    /// The session's id, as `hello` and `POST /sync/ID` name it.
    package let id: String
    let live: LiveQueries
    let client: ClientMailbox
    /// Who opened it: a message posted for it must come from the same
    /// (the adapter's principal: a token's subject, a user id).
    let owner: SyncOwner
    let logger: Logger
    let resolve: @Sendable (SyncSubscription) async throws -> SyncQuery
    private let state: Locked<State>
    /// The feeds that moved since the last batch was composed: their
    /// subscriptions' views are read again. Apart from `state`, so that a
    /// feed telling its sessions never waits for one composing a batch.
    private let moved = Locked<Set<ObjectIdentifier>>([])

    init(
        live: LiveQueries, transport: Transport, owner: SyncOwner, logger: Logger,
        resolve: @escaping @Sendable (SyncSubscription) async throws -> SyncQuery
    ) {
        var generator = SystemRandomNumberGenerator()
        id = (0..<4).map { _ in String(generator.next() as UInt32, radix: 16) }.joined(separator: "-")
        self.live = live
        client = ClientMailbox(heldDigest: nil, transport: transport)
        self.owner = owner
        self.logger = logger
        self.resolve = resolve
        state = Locked(State(position: live.database.commitPosition))
    }

    private var epoch: String { live.syncEpoch }

    // MARK: - Running

    /// Runs the connection until it ends: `hello`, then a batch whenever
    /// the client can take one. Throws when the client must be disconnected.
    package func run(write: (Frame) async throws -> Void) async throws {
        guard live.register(client) else {
            // Messages may have subscribed meanwhile (a WebSocket's are read beside this).
            leaveFeeds()
            try await write(.end(.shutdown))
            return
        }
        live.addSyncSession(self)
        logger.debug("Sync client connected", metadata: [LogKey.transport: "\(transportName)"])
        defer { end() }
        let hello = SyncJSON.object([
            ("type", SyncJSON.string("hello")), ("protocol", Array("1".utf8)), ("session", SyncJSON.string(id)),
            ("position", SyncJSON.string("\(epoch)/\(state.withLock { $0.position })")),
        ])
        try await write(.sync("hello", json: hello, for: client.transport))
        do {
            try await client.run(counters: live.counters) { frame in
                guard frame === Frame.syncWake else { return try await write(frame) }
                for message in compose() {
                    try await write(message)
                    live.counters.wrote(message, since: client.connectedAt)
                }
            }
        } catch  where client.finishReason == .disconnected {
            // The client closed the connection: not an error of the handler.
        }
    }

    private var transportName: String { client.transport == .webSocket ? "websocket" : "sse" }

    private func end() {
        leaveFeeds()
        live.removeSyncSession(self)
        live.unregister(client)
        logger.debug(
            "Sync client left",
            metadata: [
                LogKey.transport: "\(transportName)",
                LogKey.reason: "\(client.finishReason.map { "\($0)" } ?? "ended")",
            ])
    }

    /// Closes the session to messages and leaves every feed.
    private func leaveFeeds() {
        let subscriptions = state.withLock { state in
            state.isClosed = true
            defer {
                state.subscriptions = [:]
                state.idsByFeed = [:]
                state.list = []
            }
            return Array(state.subscriptions.values)
        }
        var detached: Set<ObjectIdentifier> = []
        for subscription in subscriptions where detached.insert(ObjectIdentifier(subscription.feed)).inserted {
            live.detach(self, from: subscription.feed)
        }
    }

    /// The client went away.
    package func clientLeft() {
        client.finish(.disconnected)
    }

    /// Graceful shutdown: the stream ends with its final `end` message.
    package func shutDown() {
        client.finish(.shutdown)
    }

    // MARK: - Feeds

    /// A feed moved: the write loop composes the next batch when it can,
    /// with the feed's new view.
    func feedDidMove(_ feed: SyncFeed) {
        moved.withLock { _ = $0.insert(ObjectIdentifier(feed)) }
        wake()
    }

    /// A feed ended (the database closed or was replaced): so does the connection.
    func feedDidEnd(_ feed: SyncFeed, reason: ClientFinish) {
        feedDidMove(feed)
        client.finish(reason)
    }

    /// Asks the write loop to compose (an error to send, an array handled).
    private func wake() {
        client.offer(.syncWake)
    }

    // MARK: - Client messages

    /// Handles one client message, or an array of them (a WebSocket text
    /// message, or the body of `POST /sync/ID`). A refused message is also
    /// sent on the connection as an `error` message (with the
    /// subscription's `id` when it names one); of an array, every message
    /// is handled and the first refusal thrown.
    ///
    /// No batch is composed while an array is handled: the subscriptions
    /// of a client that subscribes again after reconnecting, in one array,
    /// all enter the next batch together, as of one position.
    package func receive(_ json: Data) async throws(LiveQueriesError) {
        let messages: [SyncClientMessage]
        do {
            messages = try SyncClientMessage.messages(json: json)
        } catch {
            send(error, id: nil)
            throw error
        }
        guard messages.count > 1 else { return try await handle(messages[0], together: false) }
        state.withLock { $0.receiving += 1 }
        defer {
            state.withLock { $0.receiving -= 1 }
            wake()
        }
        var firstRefusal: LiveQueriesError?
        for message in messages {
            do throws(LiveQueriesError) {
                try await handle(message, together: true)
            } catch {
                firstRefusal = firstRefusal ?? error
            }
        }
        if let firstRefusal { throw firstRefusal }
    }

    /// Handles one message; `together`: one of an array, whose
    /// subscriptions enter one batch.
    private func handle(_ message: SyncClientMessage, together: Bool) async throws(LiveQueriesError) {
        switch message {
        case .unsubscribe(let id):
            // The feed is left only when no other subscription of this
            // session uses it, decided and done under the session's lock:
            // a subscribe of the same feed meanwhile attaches again after.
            state.withLock { state in
                if let left = state.remove(id) { live.detach(self, from: left) }
            }
        case .subscribe(let id, let subscription, let mode, let position):
            do {
                try await subscribe(id, to: subscription, mode: mode, position: position, together: together)
            } catch {
                logger.debug(
                    "Sync subscription refused",
                    metadata: [
                        LogKey.transport: "\(transportName)", LogKey.request: "\(subscription.query)",
                        LogKey.error: "\(error)",
                    ])
                send(error, id: id)
                throw error
            }
        }
    }

    private func subscribe(
        _ id: String, to subscription: SyncSubscription, mode: SyncMode, position: SyncPosition?, together: Bool
    ) async throws(LiveQueriesError) {
        let limit = live.configuration.syncMaxSubscriptions
        let refusal = state.withLock { state -> LiveQueriesError? in
            if state.subscriptions[id] != nil { return .duplicateSubscription(id) }
            if state.subscriptions.count >= limit { return .tooManySubscriptions(limit) }
            return nil
        }
        if let refusal { throw refusal }
        let query = try await live.resolveSyncQuery(subscription, with: resolve)
        // A position of this epoch no later than the server's: the client's
        // value as of then. Any other position is unknown: a snapshot.
        let held: Held =
            position.map { position in
                let known = position.epoch == epoch && position.sequence <= live.database.commitPosition
                return .resuming(from: known ? position.sequence : nil)
            } ?? .nothing
        // A feed that lingered out between the registry and the insertion
        // (an unsubscribe of the same feed left it meanwhile): another.
        for _ in 0..<3 {
            // Attached to the feed under the registry's lock: a feed that moves
            // meanwhile wakes this session, and an idle one cannot stop between.
            let feed = try live.syncFeed(for: query, attaching: self, logger: logger)
            let insertion = state.withLock { state -> Insertion in
                guard !state.isClosed else {
                    if !state.uses(feed) { live.detach(self, from: feed) }
                    return .closed
                }
                // Checked again: other subscribes ran while this one resolved.
                var refusal: LiveQueriesError?
                if state.subscriptions[id] != nil { refusal = .duplicateSubscription(id) }
                if state.subscriptions.count >= limit { refusal = .tooManySubscriptions(limit) }
                if let refusal {
                    if !state.uses(feed) { live.detach(self, from: feed) }
                    return .refused(refusal)
                }
                // Attached again under the session's lock: an unsubscribe
                // of the same feed may have left it since the registry.
                guard feed.attach(self) else { return .feedStopped }
                state.add(
                    Subscription(
                        id: id, feed: feed, mode: mode, held: held, holdsBatches: position != nil || together))
                return .added
            }
            switch insertion {
            case .added:
                // Read again at the next composition, for a failure to report.
                feedDidMove(feed)
                return
            case .refused(let refusal): throw refusal
            case .closed: return
            case .feedStopped: continue
            }
        }
        throw .tooManyObservations
    }

    /// How a subscription's insertion ended.
    private enum Insertion {
        case added
        case refused(LiveQueriesError)
        /// The session ended meanwhile.
        case closed
        /// The feed stopped meanwhile: subscribe to a new one.
        case feedStopped
    }

    /// Sends an error message: queued in the session (the client's mailbox
    /// holds one pending frame, which a feed's wake-up would replace), and
    /// written before the next batch.
    private func send(_ error: LiveQueriesError, id: String?) {
        var members: [(key: String, value: [UInt8])] = [("type", SyncJSON.string("error"))]
        if let id { members.append(("id", SyncJSON.string(id))) }
        members.append(("error", Self.errorJSON(ErrorBody(error), reason: error.reason)))
        let frame = Frame.sync("error", json: SyncJSON.object(members), for: client.transport)
        state.withLock { state in
            state.errors.append(frame)
            if state.errors.count > Self.maximumPendingErrors { state.errors.removeFirst() }
        }
        wake()
    }

    /// `{"message":…,"code":…,"reason":…}`: the one error body, with the
    /// protocol's reason when there is one.
    static func errorJSON(_ body: ErrorBody, reason: String?) -> [UInt8] {
        var members: [(key: String, value: [UInt8])] = [("message", SyncJSON.string(body.message))]
        if let code = body.code { members.append(("code", Array(String(code).utf8))) }
        if let reason { members.append(("reason", SyncJSON.string(reason))) }
        return SyncJSON.object(members)
    }

    // MARK: - Batches

    /// The messages to write now: errors of subscriptions whose fetches
    /// fail, then one batch, if every subscription's value is known at a
    /// common position and one of them changed for the client.
    ///
    /// Only the views of the feeds that moved are read: a feed tells its
    /// sessions of every change to its view.
    private func compose() -> [Frame] {
        state.withLock { state in
            guard !state.isClosed else { return [] }
            var frames = state.errors
            state.errors = []
            let moved = moved.withLock { moved in
                defer { moved = [] }
                return moved
            }
            for feed in moved {
                guard let ids = state.idsByFeed[feed], let first = ids.first,
                    let view = state.subscriptions[first]?.feed.view
                else { continue }
                state.latestKnown = max(state.latestKnown, view.lastPosition)
                for id in ids.sorted() {
                    guard let subscription = state.subscriptions[id] else { continue }
                    subscription.refresh(view)
                    if let failure = view.failure, failure.generation > subscription.failureSent {
                        subscription.failureSent = failure.generation
                        frames.append(errorFrame(failure, id: id))
                    }
                }
            }
            if let batch = batch(&state) { frames.append(batch) }
            return frames
        }
    }

    private func errorFrame(_ failure: SyncFeed.Failure, id: String) -> Frame {
        let json = SyncJSON.object([
            ("type", SyncJSON.string("error")), ("id", SyncJSON.string(id)),
            ("position", SyncJSON.string("\(epoch)/\(failure.position)")),
            ("error", Self.errorJSON(failure.body, reason: nil)),
        ])
        return .sync("error", json: json, for: client.transport)
    }

    private func batch(_ state: inout State) -> Frame? {
        // An array of messages is being handled: its subscriptions enter together.
        guard state.receiving == 0 else { return nil }
        // The batch's position: the latest at which a value is known, so
        // that every value is known there if any position allows it.
        let target = max(state.position, state.latestKnown)
        var changed: [Subscription] = []
        for subscription in state.list {
            guard let position = subscription.currentPosition else {
                // A subscription that resumes, or came in an array, waits for
                // its first value: the others must not move past the position
                // its client shows, or enter a batch without it.
                if subscription.holdsBatches, !subscription.isFailing { return nil }
                continue
            }
            // Every value must be the value at `target`: known at its feed's
            // last position, and no commit up to `target` touched it since.
            // Otherwise a feed is fetching, and will move again: then the
            // batch is composed. So batches keep coming while commits go on,
            // as long as fetches end between two commits that touch them.
            // (A subscription whose fetch fails is in error, as its client
            // was told: it holds no batch back until a fetch succeeds again.)
            if !subscription.isFailing, !subscription.isValid(at: target) { return nil }
            switch subscription.held {
            case .nothing, .resuming: changed.append(subscription)
            case .value(let held) where held < position: changed.append(subscription)
            case .value: break
            }
        }
        guard !changed.isEmpty else { return nil }
        var entries: [(key: String, value: [UInt8])] = []
        // The earliest commit that a value the client held changed with:
        // where the batch's commit-to-socket latency starts (a snapshot of
        // a new subscription is no commit's news).
        var earliestNews: ContinuousClock.Instant?
        for subscription in changed.sorted(by: { $0.id < $1.id }) {
            guard let current = subscription.view.current else { continue }
            if let entry = entry(for: subscription, view: subscription.view, current: current) {
                entries.append((subscription.id, entry))
                if case .value = subscription.held, let committedAt = current.committedAt {
                    earliestNews = min(earliestNews ?? committedAt, committedAt)
                }
            }
            subscription.held = .value(at: current.position)
        }
        state.position = target
        guard !entries.isEmpty else { return nil }
        let json = SyncJSON.object([
            ("type", SyncJSON.string("batch")), ("position", SyncJSON.string("\(epoch)/\(target)")),
            ("changes", SyncJSON.object(entries)),
        ])
        return .sync("batch", json: json, for: client.transport, committedAt: earliestNews)
    }

    /// What one subscription receives in a batch; `nil` when the client
    /// holds the current value already (it resumed from a position).
    private func entry(for subscription: Subscription, view: SyncFeed.View, current: SyncFeed.Current) -> [UInt8]? {
        if subscription.mode == .values || current.value.rows == nil { return valueEntry(current) }
        let from: UInt64
        var reason = "slow"
        switch subscription.held {
        case .nothing:
            return snapshotEntry(current, reason: "subscribed")
        case .resuming(nil):
            return snapshotEntry(current, reason: "resumed")
        case .resuming(let position?):
            // A position of a shared epoch may come from another server,
            // whose fetches ran at other positions: resumed only from a
            // position whose value this feed knows.
            if live.sharesSyncEpoch, !view.knowsValue(at: position) {
                return snapshotEntry(current, reason: "resumed")
            }
            from = position
            reason = "resumed"
        case .value(let position):
            from = position
        }
        switch view.history.between(from, current: current.position) {
        case .upToDate:
            return nil
        case .tooOld:
            return snapshotEntry(current, reason: reason)
        case .reset:
            return snapshotEntry(current, reason: "reset")
        case .steps(let steps):
            let changes = steps.compactMap(\.changes)
            if changes.count == 1, case .value = subscription.held {
                return [UInt8](#"{"kind":"changes","#.utf8) + changes[0].dropFirst()
            }
            // Several steps: as a catch-up, unless a snapshot is smaller.
            let size = changes.reduce(0) { $0 + $1.count }
            if size > current.snapshotMembers.count { return snapshotEntry(current, reason: reason) }
            return [UInt8](#"{"kind":"catchUp","steps":"#.utf8) + SyncJSON.array(changes) + [UInt8(ascii: "}")]
        }
    }

    private func snapshotEntry(_ current: SyncFeed.Current, reason: String) -> [UInt8] {
        var json = [UInt8](#"{"kind":"snapshot","reason":"#.utf8)
        json += SyncJSON.string(reason)
        json.append(UInt8(ascii: ","))
        json += current.snapshotMembers
        json.append(UInt8(ascii: "}"))
        return json
    }

    private func valueEntry(_ current: SyncFeed.Current) -> [UInt8] {
        // A value that does not encode goes out as `null` (and is logged once by the feed).
        [UInt8](#"{"kind":"value","value":"#.utf8) + (current.wholeJSON ?? Array("null".utf8)) + [UInt8(ascii: "}")]
    }
}
