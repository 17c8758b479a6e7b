import DBWatch
import Foundation
import Logging

/// One observation shared by every sync subscription of one request and
/// scope: it keys each value once, computes the changes from the previous
/// one once, keeps them in a bounded ``SyncHistory``, and tells its
/// sessions that it moved. Sessions read its ``View`` when they compose a
/// batch; it never waits for them.
final class SyncFeed: Sendable {
    /// The latest value, with the bytes sessions ask for, made once.
    final class Current: Sendable {
        let value: SyncValue
        /// The position it was fetched at.
        let position: UInt64
        /// When the first commit that changed the previous value was
        /// published (`nil` for the feed's first value, no commit's news):
        /// where a batch's commit-to-socket latency starts.
        let committedAt: ContinuousClock.Instant?
        private let cache = Locked<(snapshot: [UInt8]?, whole: [UInt8]?)>((nil, nil))

        init(_ value: SyncValue, at position: UInt64, committedAt: ContinuousClock.Instant? = nil) {
            self.value = value
            self.position = position
            self.committedAt = committedAt
        }

        /// `"rows":[{"key":K,"row":R},…]` with `"columns"` when known: the
        /// members of a snapshot entry, without its braces.
        var snapshotMembers: [UInt8] {
            if let made = cache.withLock({ $0.snapshot }) { return made }
            var json: [UInt8] = []
            if let columns = value.columns {
                json += #""columns":"#.utf8
                json += SyncJSON.array(columns.map(SyncJSON.string))
                json += ",".utf8
            }
            json += #""rows":["#.utf8
            for (index, row) in (value.rows?.rows ?? []).enumerated() {
                if index > 0 { json.append(UInt8(ascii: ",")) }
                json += #"{"key":"#.utf8
                json += row.key
                json += #","row":"#.utf8
                json += row.row
                json.append(UInt8(ascii: "}"))
            }
            json.append(UInt8(ascii: "]"))
            cache.withLock { $0.snapshot = json }
            return json
        }

        /// The whole value's JSON; `nil` when it does not encode.
        var wholeJSON: [UInt8]? {
            if let made = cache.withLock({ $0.whole }) { return made }
            guard let json = try? value.encode() else { return nil }
            cache.withLock { $0.whole = json }
            return json
        }
    }

    /// The latest failure of the feed's fetches, until a fetch succeeds.
    struct Failure: Sendable {
        let body: ErrorBody
        let position: UInt64
        /// Grows with each new failure: a session sends each once.
        let generation: Int
    }

    /// What a session reads when it composes a batch: a snapshot of the
    /// feed's state, made when the feed moves. A class: a session reads
    /// its subscriptions' views on every batch, and a reference costs one
    /// retain where a copy of these fields costs a dozen.
    final class View: Sendable {
        let current: Current?
        /// The latest position at which `current` is known to be the value.
        let lastPosition: UInt64
        let failure: Failure?
        let history: SyncHistory
        let probe: ObservationProbe?
        /// The feed ended (the database closed or was replaced).
        let ended: ClientFinish?

        init(
            current: Current?, lastPosition: UInt64, failure: Failure?, history: SyncHistory,
            probe: ObservationProbe?, ended: ClientFinish?
        ) {
            self.current = current
            self.lastPosition = lastPosition
            self.failure = failure
            self.history = history
            self.probe = probe
            self.ended = ended
        }

        /// The first position at which `current` may no longer be the
        /// value: the first commit after `lastPosition` that touched what
        /// its request reads (`.max`: none yet). `current` is the value at
        /// every position from `lastPosition` up to, not including, this one.
        var validUntil: UInt64 { probe?.firstPossibleChange(after: lastPosition) ?? lastPosition &+ 1 }

        /// Whether the feed knows its value at `position` exactly, for a
        /// `position` no later than the database's: a value was fetched
        /// there (the current one, or one a history step starts from), or
        /// `position` lies between the last position the current value was
        /// found at and the first commit since that touched it. A position
        /// between two fetches is not known otherwise: the value may have
        /// changed at a commit the feed's fetch coalesced.
        func knowsValue(at position: UInt64) -> Bool {
            guard let current else { return false }
            if position == current.position || history.hasStep(from: position) { return true }
            return position >= lastPosition && position < validUntil
        }
    }

    private struct State {
        var sessions: [ObjectIdentifier: SyncSession] = [:]
        var current: Current? { didSet { view = nil } }
        var lastPosition: UInt64 = 0 { didSet { view = nil } }
        var failure: Failure? { didSet { view = nil } }
        var failures = 0
        var history: SyncHistory { didSet { view = nil } }
        var probe: ObservationProbe? { didSet { view = nil } }
        var task: Task<Void, Never>?
        var ended: ClientFinish? { didSet { view = nil } }
        /// When the last session left, while none came back (or when a
        /// catch-up request used a feed no session uses).
        var idleSince: ContinuousClock.Instant?
        /// Catch-up requests waiting for the first fetch to end.
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// ``stop()`` ran: no fetch comes.
        var stopped = false
        /// A session used it (else only catch-up requests did).
        var hadSessions = false
        /// The view of the fields that clear it, made once per change for
        /// all the sessions that read it.
        var view: View?

        /// Whether the first fetch ended (a value, a failure, the end).
        var hasFetched: Bool { current != nil || failure != nil || ended != nil }
    }

    let key: SubscriptionKey
    let name: String
    private let state: Locked<State>

    init(key: SubscriptionKey, name: String, historyLimit: Int) {
        self.key = key
        self.name = name
        state = Locked(State(history: SyncHistory(limit: historyLimit)))
    }

    var view: View {
        state.withLock { state in
            if let view = state.view { return view }
            let view = View(
                current: state.current, lastPosition: state.lastPosition, failure: state.failure,
                history: state.history, probe: state.probe, ended: state.ended)
            state.view = view
            return view
        }
    }

    var isEnded: Bool { state.withLock { $0.ended != nil } }

    // MARK: - Sessions

    /// Adds a session (again, if it is already there); returns `false`
    /// when the feed stopped (it lingered out): the session needs a new one.
    @discardableResult
    func attach(_ session: SyncSession) -> Bool {
        state.withLock {
            guard !$0.stopped else { return false }
            $0.sessions[ObjectIdentifier(session)] = session
            $0.idleSince = nil
            $0.hadSessions = true
            return true
        }
    }

    /// A catch-up request used the feed: when no session uses it, it is
    /// idle from now (it lingers as after its last session left). Returns
    /// whether it is idle.
    func touch(now: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            guard state.sessions.isEmpty else { return false }
            state.idleSince = now
            return true
        }
    }

    /// Returns once the feed's first fetch ended (with a value, a failure,
    /// or the end of the feed), or the feed stopped. Not cancellable: a
    /// fetch ends, or the feed stops after lingering.
    func firstFetch() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiting = state.withLock { state in
                guard !state.hasFetched, !state.stopped else { return false }
                state.waiters.append(continuation)
                return true
            }
            if !waiting { continuation.resume() }
        }
    }

    /// Resumes the catch-up requests waiting for the first fetch.
    private func wakeWaiters() {
        let waiters = state.withLock { state in
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Removes a session; returns whether none is left.
    func detach(_ session: SyncSession, now: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            state.sessions[ObjectIdentifier(session)] = nil
            guard state.sessions.isEmpty else { return false }
            state.idleSince = now
            return true
        }
    }

    /// Since when no session uses it; `nil` while one does.
    var idleSince: ContinuousClock.Instant? {
        state.withLock { $0.sessions.isEmpty ? $0.idleSince : nil }
    }

    /// Whether a session ever used it (a feed only catch-up requests used
    /// holds no history a returning client resumes from).
    var hadSessions: Bool { state.withLock { $0.hadSessions } }

    /// Marks it stopped if no session uses it (and none has since
    /// `deadline`, when given); returns whether it did. Decided and marked
    /// under the feed's lock, so that a session attaching meanwhile either
    /// comes first (the feed stays) or is told the feed stopped: never
    /// attached to a feed that stops. ``stop()`` then ends its task.
    func retireIfIdle(before deadline: ContinuousClock.Instant? = nil) -> Bool {
        state.withLock { state in
            guard state.sessions.isEmpty, let since = state.idleSince, !state.stopped else { return false }
            if let deadline, since >= deadline { return false }
            state.stopped = true
            return true
        }
    }

    /// Keeps the observation's task; cancels it when the feed already
    /// stopped (a catch-up's feed may stop before its task is set).
    func setTask(_ task: Task<Void, Never>) {
        let stopped = state.withLock { state in
            if !state.stopped { state.task = task }
            return state.stopped
        }
        if stopped { task.cancel() }
    }

    /// Stops the observation; returns its task to await.
    func stop() -> Task<Void, Never>? {
        let (task, waiters) = state.withLock { state in
            defer { state.waiters = [] }
            state.stopped = true
            return (state.task.take(), state.waiters)
        }
        task?.cancel()
        for waiter in waiters { waiter.resume() }
        return task
    }

    // MARK: - Observing

    /// Observes `request` until cancelled or the database closes, keying
    /// each value with `keyed`.
    func observe<R: Queryable>(
        _ request: R, in live: LiveQueries, keyed: @Sendable (R.Value) -> SyncValue
    ) async {
        var iterator = live.database.observe(request, options: live.configuration.observationOptions).positioned
            .makeAsyncIterator()
        state.withLock { $0.probe = iterator.probe }
        while let element = await iterator.next() {
            live.counters.fetches.add(1, ordering: .relaxed)
            switch element.result {
            case nil:
                advance(to: element.position)
            case .success(let value)?:
                publish(
                    keyed(value), at: element.position, historyLimit: live.configuration.syncHistoryBytes,
                    database: live.database)
            case .failure(let error)?:
                if (error as? SQLiteError)?.isDatabaseClosed == true {
                    live.syncFeedDidEnd(.databaseClosed)
                    end(.databaseClosed, body: ErrorBody(error), at: element.position)
                    return
                }
                if error is DatabaseFileReplacedError {
                    live.syncFeedDidEnd(.databaseReplaced)
                    end(.databaseReplaced, body: ErrorBody(error), at: element.position)
                    return
                }
                if Task.isCancelled { return }
                fail(ErrorBody(error), at: element.position)
            }
        }
    }

    /// A fetch found the value unchanged at `position`.
    private func advance(to position: UInt64) {
        let sessions = state.withLock { state in
            state.lastPosition = max(state.lastPosition, position)
            return Array(state.sessions.values)
        }
        for session in sessions { session.feedDidMove(self) }
    }

    /// A new value at `position`: its changes from the previous one join
    /// the history (computed outside the lock: this task alone writes values).
    private func publish(
        _ value: SyncValue, at position: UInt64, historyLimit: Int, database: any DatabaseWriter
    ) {
        let previous = state.withLock { ($0.current, $0.failure != nil, $0.lastPosition, $0.probe) }
        var next = Current(value, at: position)
        var step: SyncHistory.Step?
        if let old = previous.0 {
            // The old value held from its last known position up to the
            // first commit since that touched the query, as far as the
            // center's log still tells (else: at its last position only).
            let last = max(previous.2, old.position)
            let change = previous.3?.firstPossibleChange(after: last) ?? .max
            let until = min(change == .max ? last &+ 1 : max(change, last &+ 1), position)
            // The news started with that commit (or, unknown, with the value's own).
            next = Current(
                value, at: position,
                committedAt: database.commitInstant(at: until) ?? database.commitInstant(at: position))
            if let oldRows = old.value.rows, let newRows = value.rows {
                let changes = KeyedChanges.between(oldRows, newRows)
                if changes.isEmpty, !previous.1 {
                    // Equal rows (a value that is not Equatable): unchanged.
                    return advance(to: position)
                }
                step = SyncHistory.Step(
                    from: old.position, to: position, known: last, until: until,
                    changes: Array(changes.encodedJSON()))
            } else if let oldJSON = old.wholeJSON, oldJSON == next.wholeJSON, !previous.1 {
                return advance(to: position)
            } else {
                step = SyncHistory.Step(from: old.position, to: position, known: last, until: until, changes: nil)
            }
        }
        let sessions = state.withLock { state in
            if let step { state.history.append(step) }
            state.current = next
            state.lastPosition = max(state.lastPosition, position)
            state.failure = nil
            return Array(state.sessions.values)
        }
        wakeWaiters()
        for session in sessions { session.feedDidMove(self) }
    }

    private func fail(_ body: ErrorBody, at position: UInt64) {
        let sessions = state.withLock { state in
            state.failures += 1
            state.failure = Failure(body: body, position: position, generation: state.failures)
            // `lastPosition` stays: the value is not known at `position`.
            return Array(state.sessions.values)
        }
        wakeWaiters()
        for session in sessions { session.feedDidMove(self) }
    }

    private func end(_ reason: ClientFinish, body: ErrorBody, at position: UInt64) {
        let sessions = state.withLock { state in
            state.failures += 1
            state.failure = Failure(body: body, position: position, generation: state.failures)
            state.ended = reason
            return Array(state.sessions.values)
        }
        wakeWaiters()
        for session in sessions { session.feedDidEnd(self, reason: reason) }
    }
}

/// A value as a sync feed keeps it: its keyed rows, and its whole JSON on demand.
package struct SyncValue: Sendable {
    /// Its rows by key, in order; `nil`: it has no key (it goes out whole).
    let rows: KeyedRows?
    /// The column names of a snapshot's rows, when rows are arrays.
    let columns: [String]?
    /// The whole value's JSON.
    let encode: @Sendable () throws -> [UInt8]

    package init(rows: KeyedRows?, columns: [String]?, encode: @escaping @Sendable () throws -> [UInt8]) {
        self.rows = rows
        self.columns = columns
        self.encode = encode
    }
}
