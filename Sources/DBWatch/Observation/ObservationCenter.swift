import Logging
import Synchronization

/// The observations of one database: indexes them by the tables they read,
/// so that a commit costs work only for the observations whose region it
/// touches, and keeps a short log of recent commits so that an observation
/// whose region was unknown or changed during a fetch misses nothing.
///
/// The path of one commit, from the hook to the consumer:
///
/// 1. Hook (`Tracking/ChangeCollector.swift`): while observations exist,
///    SQLite's pre-update and commit hooks, with each statement's
///    authorizer footprint, collect the rows, columns and tables a write
///    transaction changes. Once the committing statement has succeeded, the
///    writer's thread calls ``didCommit(_:)`` with those ``DatabaseChanges``
///    (`Tracking/ExternalChangeMonitor.swift` does the same for another
///    connection's commit).
/// 2. Center (this file): under its one lock, numbers the commit, logs it
///    for the fetches in flight, and finds the observations whose region it
///    touches through the per-table index (`TableObservers.swift`). Outside
///    the lock, each touched driver counts the notification and says
///    whether to fetch now (``ObservationDriving/commitDidTouchRegion()``);
///    ``enqueueFetches(of:)`` cuts those fetches into batches and pushes
///    them on the fetch queue (`Access/JobQueue.swift`: the pool's readers,
///    or the queue's connection).
/// 3. Batch (`FetchBatch.swift`): on one connection, reads the commit
///    serial, then runs each of its drivers' fetches in one read transaction.
/// 4. Driver (`ObservationDriver.swift`): fetches its request, recording
///    the region it read; reports that region up (the center reindexes it
///    and tells whether a commit published since the batch's serial touched
///    it: then the driver fetches again); hands a result that differs from
///    the last to each subscriber's mailbox, under its lock. What to do
///    next (fetch again, wait for the rate limit, stop) is decided by its
///    state machine (`ObservationDriverStateMachine.swift`).
/// 5. Mailbox (`ResultMailbox.swift`, its states in
///    `ResultMailboxStateMachine.swift`): keeps the latest result (latest
///    wins) or wakes the consumer's suspended `next()`, once the driver's
///    lock is released.
/// 6. Consumer (`QueryObservation.swift`): an iteration's `next()` returns
///    the value or throws the error; a ``LiveQuery`` (`LiveQuery.swift`)
///    consumes one observation and fans each value out to mailboxes of its own.
///
/// Calls go down this path: the center calls batches and drivers (through
/// ``ObservationDriving``, in `ObservationDriving.swift`), a batch calls
/// drivers, a driver calls mailboxes. The only way back up is an
/// ``Uplink``, which batches and drivers hold instead of the center.
final class ObservationCenter: Sendable {
    private struct Entry {
        let driver: any ObservationDriving
        var region: DatabaseRegion?
        /// Its last fetch failed: every commit refetches it (see
        /// ``fetchDidFinish(_:region:failed:startSerial:)``).
        var observesEverything = false
        /// The number of commits published when it registered: the commits
        /// since, minus those it was notified of, are the commits it skipped.
        let registeredAt: UInt64
        /// The position of the fetch that recorded `region`: the fetches
        /// since read the same region (see ``firstPossibleChange(of:after:)``).
        var regionFetchedAt: UInt64 = .max
    }

    private struct RecentCommit {
        let serial: UInt64
        let changes: DatabaseChanges
        /// When it was published (see ``commitInstant(at:)``).
        let instant: ContinuousClock.Instant
    }

    private struct State {
        /// The position of the last published commit: one more than the
        /// previous, or the position its writer chose (see
        /// ``didCommit(_:at:)``), so positions grow but need not be consecutive.
        var commitSerial: UInt64 = 0
        /// The commits published: what the statistics count.
        var commitCount: UInt64 = 0
        /// The log (`recent`) holds every commit published after this
        /// serial (commits are not logged while no observation runs).
        var loggedAfter: UInt64 = 0
        var entries: [ObjectIdentifier: Entry] = [:]
        var shared: [DriverSharingKey: ObjectIdentifier] = [:]
        var byTable: [TableName: TableObservers] = [:]
        /// The entries whose last fetch failed; usually none.
        var observingEverything: Set<ObjectIdentifier> = []
        /// Recent commits, oldest first.
        var recent: [RecentCommit] = []
        /// The database closed: observations end at once.
        var isClosed = false
        /// ``writeJobs`` when the serial last accounted for them.
        var writeJobsSeen: UInt64 = 0
    }

    /// A commit's quick refetches are split among the readers only in
    /// parts of at least this many (see ``enqueueFetches(of:)``).
    static let minimumBatchSize = 32

    /// At least this many recent commits are kept for fetches in flight; a
    /// fetch that outlives more commits than the log holds refetches
    /// conservatively.
    static let recentCommitCapacity = 128

    private let state = Locked(State())
    /// Write jobs started (see ``writeJobWillStart()``): one that ran while
    /// nothing was observed committed without a number.
    private let writeJobs = Atomic<UInt64>(0)
    /// Another process may write the file (external changes are detected,
    /// but only while something is observed).
    private let othersMayWrite = Atomic<Bool>(false)
    private let observationCount = Atomic<Int>(0)
    /// The subscriptions of all observations (see ``subscriberCount``).
    private let subscriptions = Atomic<Int>(0)
    let logger: Logger

    /// Where the fetches run: the pool's readers, or the queue's connection.
    let fetchQueue: JobQueue

    /// What this process's writer's commits pass between becoming visible
    /// and being published, so that a fetch knows its snapshot's position.
    let commitGate = CommitGate()

    init(fetchQueue: JobQueue, logger: Logger) {
        self.fetchQueue = fetchQueue
        self.logger = logger
    }

    /// Whether any observation runs: read by the writer before each job.
    var hasObservations: Bool { observationCount.load(ordering: .acquiring) > 0 }

    /// The number of running observations (shared requests count once).
    var count: Int { observationCount.load(ordering: .acquiring) }

    /// The subscriptions of all observations: each iteration of an
    /// observation counts, also when it shares its driver with others.
    var subscriberCount: Int { subscriptions.load(ordering: .relaxed) }

    /// A driver added (`1`) or removed (`-1`) a subscriber.
    fileprivate func subscribersDidChange(by delta: Int) {
        subscriptions.add(delta, ordering: .relaxed)
    }

    /// The serial of the last published commit.
    var commitSerial: UInt64 { state.withLock { $0.commitSerial } }

    // MARK: - Registration

    /// Returns the running driver shared under `key`, or registers the one
    /// `make` creates. Registration happens before the first fetch.
    /// After ``close()`` the driver is ended before it is returned.
    ///
    /// A driver whose last subscriber just left is stopped but still
    /// registered for a moment: it is not shared any more, a new one
    /// replaces it under `key`.
    func driver<D: ObservationDriving>(sharedAs key: DriverSharingKey?, make: () -> D) -> (D, isNew: Bool) {
        let (driver, isNew, isClosed) = state.withLock { state in
            if let key, let id = state.shared[key], let existing = state.entries[id]?.driver as? D,
                !existing.isStopped
            {
                return (existing, false, state.isClosed)
            }
            let isFirst = state.entries.isEmpty
            let driver = make()
            let id = ObjectIdentifier(driver)
            state.entries[id] = Entry(driver: driver, registeredAt: state.commitCount)
            if let key { state.shared[key] = id }
            // Counted before the write jobs are read (see numberUnseenCommits).
            observationCount.add(1, ordering: .sequentiallyConsistent)
            if isFirst { numberUnseenCommits(&state) }
            return (driver, true, state.isClosed)
        }
        if isClosed { driver.endBecauseDatabaseClosed() }
        return (driver, isNew)
    }

    /// While nothing is observed, commits are not numbered: this process's
    /// writer runs without hooks, and other processes' commits are not
    /// looked for. So the first observation after such a time starts at a
    /// new position, one no result before it was labelled with: a position
    /// handed out earlier (a sync `hello`, a batch) never names a later
    /// state. Only when commits may have gone unnumbered: a write job
    /// started since the last numbered commit, or another process may write.
    ///
    /// A job counts itself before it reads whether anything is observed,
    /// and a registration counts itself before it reads the jobs: so a job
    /// that runs without hooks is always seen here, even one still running.
    private func numberUnseenCommits(_ state: inout State) {
        let jobs = writeJobs.load(ordering: .sequentiallyConsistent)
        guard jobs != state.writeJobsSeen || othersMayWrite.load(ordering: .relaxed) else { return }
        state.writeJobsSeen = jobs
        state.commitSerial += 1
        state.loggedAfter = state.commitSerial
    }

    /// A write job starts (on the writer's thread, before it reads
    /// ``hasObservations``): if nothing is observed, its commits go
    /// unnumbered. Returns whether anything is observed.
    func writeJobWillStart() -> Bool {
        writeJobs.add(1, ordering: .sequentiallyConsistent)
        return observationCount.load(ordering: .sequentiallyConsistent) > 0
    }

    /// Another process may write the database (external changes are
    /// detected): see ``numberUnseenCommits(_:)``.
    func noteOtherWriters() {
        othersMayWrite.store(true, ordering: .relaxed)
    }

    /// The database closed: every observation, running or started later,
    /// delivers ``SQLiteError/databaseClosed`` as its last element and ends,
    /// so that no consumer waits forever.
    func close() {
        let drivers = state.withLock { state in
            state.isClosed = true
            return state.entries.values.map(\.driver)
        }
        for driver in drivers { driver.endBecauseDatabaseClosed() }
    }

    /// Removes a driver and its index entries.
    func remove(_ driver: some ObservationDriving) {
        let id = ObjectIdentifier(driver)
        state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: id) else { return }
            // Unknown from now on: the fast path of firstPossibleChange is closed.
            driver.touchedMark.set(.max)
            if let key = driver.sharingKey, state.shared[key] == id { state.shared[key] = nil }
            if let region = entry.region { Self.unindex(id, region: region, in: &state) }
            if entry.observesEverything { state.observingEverything.remove(id) }
            observationCount.subtract(1, ordering: .releasing)
            if state.entries.isEmpty {
                state.recent.removeAll()
                state.loggedAfter = state.commitSerial
            }
        }
    }

    /// Records the region of a finished fetch. Returns whether a commit
    /// published after `startSerial` touched that region (the fetch may not
    /// have seen it, so the driver must fetch again); `.max` checks nothing.
    ///
    /// A fetch that `failed` (threw) observes the whole database until a
    /// fetch succeeds: its error may depend on anything, also on what it
    /// did not get to read (a fetch that throws before running any SQL
    /// reads nothing), so every commit refetches it. A fetch that succeeds
    /// observes what it read, nothing when it read nothing (its value cannot
    /// change). Costs nothing per commit while no fetch is failing.
    fileprivate func fetchDidFinish(
        _ driver: some ObservationDriving, region: DatabaseRegion, failed: Bool, startSerial: UInt64
    ) -> Bool {
        let id = ObjectIdentifier(driver)
        return state.withLock { state in
            guard var entry = state.entries[id] else { return false }
            if entry.region != region || entry.observesEverything != failed {
                if let old = entry.region { Self.unindex(id, region: old, in: &state) }
                for (table, read) in region.entries {
                    state.byTable[table, default: TableObservers()].insert(id, read: read)
                }
                entry.region = region
                entry.regionFetchedAt = startSerial
                if entry.observesEverything != failed {
                    entry.observesEverything = failed
                    if failed {
                        state.observingEverything.insert(id)
                    } else {
                        state.observingEverything.remove(id)
                    }
                }
                state.entries[id] = entry
            }
            guard startSerial < state.commitSerial else { return false }
            let missed =
                failed  // any commit since may change the outcome
                || startSerial < state.loggedAfter  // the log no longer covers the fetch
                || state.recent.contains { $0.serial > startSerial && $0.changes.touches(region) }
            if missed { driver.touchedMark.set(state.commitSerial) }
            return missed
        }
    }

    /// The first position after `position` at which a commit touched the
    /// region of `driver`, or may have: its value at `position` (a value
    /// it delivered there) is its value at every position from `position`
    /// up to, not including, the one returned. `.max` while no commit since
    /// touched it (the value is the value now).
    ///
    /// Exact for the position of a value the driver delivered: the center
    /// marks a driver touched under the lock that numbers the commit, and a
    /// fetch's missed commits before its value is delivered; the log of
    /// recent commits tells which commit came first. Where the log no
    /// longer reaches back, or the region changed since, the answer is
    /// `position + 1` (the value is known at `position` only); so for a
    /// driver no longer registered.
    func firstPossibleChange(of driver: some ObservationDriving, after position: UInt64) -> UInt64 {
        // Untouched since `position`: one load, without the lock. (A commit
        // being numbered meanwhile comes after any position the caller knows.)
        if driver.touchedMark.value <= position { return .max }
        return state.withLock { state in
            // (Touched after `position` stays so: marks only grow.)
            guard let entry = state.entries[ObjectIdentifier(driver)] else { return position &+ 1 }
            guard let region = entry.region, !entry.observesEverything, position >= entry.regionFetchedAt,
                position >= state.loggedAfter
            else { return position &+ 1 }
            // The log is ordered by serial: find the first commit after
            // `position`, then the first of those that touches the region.
            var low = 0
            var high = state.recent.count
            while low < high {
                let middle = (low + high) / 2
                if state.recent[middle].serial <= position { low = middle + 1 } else { high = middle }
            }
            for commit in state.recent[low...] where commit.changes.touches(region) { return commit.serial }
            return position &+ 1
        }
    }

    private static func unindex(_ id: ObjectIdentifier, region: DatabaseRegion, in state: inout State) {
        for table in region.entries.keys {
            state.byTable[table]?.remove(id)
            if state.byTable[table]?.isEmpty == true { state.byTable[table] = nil }
        }
    }

    // MARK: - Commits

    /// Publishes a commit (on the writer's thread, after the committing
    /// statement finished): every observation whose region it touches
    /// refetches. Its position is the next serial, or `position` when the
    /// writer chose a larger one (``Database/setCommitPosition(_:)``: a
    /// replica publishes its source's log positions).
    func didCommit(_ changes: DatabaseChanges, at position: UInt64? = nil) {
        var touched: [any ObservationDriving] = []
        let instant = ContinuousClock.now
        state.withLock { state in
            state.commitSerial = max(state.commitSerial + 1, position ?? 0)
            state.commitCount += 1
            // The write jobs before it are behind this position too.
            state.writeJobsSeen = writeJobs.load(ordering: .acquiring)
            guard !state.entries.isEmpty else {
                state.loggedAfter = state.commitSerial
                return
            }
            state.recent.append(RecentCommit(serial: state.commitSerial, changes: changes, instant: instant))
            if state.recent.count > 2 * Self.recentCommitCapacity {
                let dropped = state.recent.count - Self.recentCommitCapacity
                state.loggedAfter = state.recent[dropped - 1].serial
                state.recent.removeFirst(dropped)
            }
            let serial = state.commitSerial
            if changes.affectsEverything {
                for index in state.entries.indices {
                    state.entries.values[index].driver.touchedMark.set(serial)
                    touched.append(state.entries.values[index].driver)
                }
                return
            }
            var ids: Set<ObjectIdentifier> = []
            changes.forEachTable { table, change in
                state.byTable[table]?.forEachTouched(by: change) { ids.insert($0) }
            }
            if !state.observingEverything.isEmpty { ids.formUnion(state.observingEverything) }
            for id in ids {
                let index = state.entries.index(forKey: id)!
                state.entries.values[index].driver.touchedMark.set(serial)
                touched.append(state.entries.values[index].driver)
            }
        }
        // One batch for the whole commit: one reader woken, and the changed
        // pages read once for all (see FetchBatch).
        enqueueFetches(of: touched.filter { $0.commitDidTouchRegion() })
    }

    /// When the commit at `position` was published: its writer's commit
    /// (once the committing statement finished), or another process's
    /// commit when this process detected it. `nil` for a position that is
    /// not a commit's, or a commit no longer in the log of recent ones (at
    /// least ``recentCommitCapacity`` are kept while observations run).
    /// The log is searched from its newest commit: a value usually carries
    /// one of the last positions.
    func commitInstant(at position: UInt64) -> ContinuousClock.Instant? {
        state.withLock { state in
            for commit in state.recent.reversed() where commit.serial <= position {
                return commit.serial == position ? commit.instant : nil
            }
            return nil
        }
    }

    /// Moves the position of the last commit forward to `position`, without
    /// a commit: a database that already holds everything up to a position
    /// of its own numbering (a replica reopening its file at its stored log
    /// position) starts there. Never moves it back; touches no observation.
    func advanceCommitSerial(to position: UInt64) {
        state.withLock { state in
            guard position > state.commitSerial else { return }
            state.commitSerial = position
            // The writer says the database holds everything up to here.
            state.writeJobsSeen = writeJobs.load(ordering: .acquiring)
        }
    }

    /// Queues the fetches of `drivers`: the quick ones in one ``FetchBatch``,
    /// or, when there are many, in one batch per reader; each slow one (two
    /// slow fetches in a row) in a batch of its own, so that a slow fetch
    /// delays no other (idle readers run them in parallel). When the queue
    /// is closed, fails them with ``SQLiteError/databaseClosed``.
    func enqueueFetches(of drivers: [any ObservationDriving]) {
        guard !drivers.isEmpty else { return }
        var quick: [any ObservationDriving] = []
        var slow: [FetchBatch] = []
        for driver in drivers {
            if driver.fetchesAlone {
                slow.append(FetchBatch(drivers: [driver], uplink: uplink))
            } else {
                quick.append(driver)
            }
        }
        var batches: [FetchBatch] = []
        // Many quick fetches are shared among the readers, at least
        // `minimumBatchSize` each: each part reads the changed pages once.
        let parts =
            quick.count < 2 * Self.minimumBatchSize
            ? 1 : max(1, min(fetchQueue.workerCount, quick.count / Self.minimumBatchSize))
        if !quick.isEmpty {
            // Even parts: each holds at least `quick.count / parts` drivers.
            for part in 0..<parts {
                let range = (part * quick.count / parts)..<((part + 1) * quick.count / parts)
                batches.append(FetchBatch(drivers: Array(quick[range]), uplink: uplink))
            }
        }
        batches += slow
        if !fetchQueue.push(contentsOf: batches) {
            for batch in batches { batch.fail(with: SQLiteError.databaseClosed) }
        }
    }

    /// Delivers the replacement error to every observation.
    func databaseFileWasReplaced(_ error: any Error) {
        let drivers = state.withLock { state in state.entries.values.map(\.driver) }
        for driver in drivers { driver.deliver(error) }
    }

    // MARK: - The way up

    /// The one way back up from the batches and drivers of a center: what
    /// they may report to it or ask of it, and nothing else (not the index,
    /// not the registry). It holds the center; its members only forward.
    struct Uplink: Sendable {
        fileprivate let center: ObservationCenter

        /// The serial of the last published commit: a batch reads it before
        /// it takes its snapshot.
        var commitSerial: UInt64 { center.commitSerial }

        /// What a batch checks after taking its snapshot: see ``CommitGate``.
        var commitGate: CommitGate { center.commitGate }

        /// Where drivers log a failing or recovering fetch.
        var logger: Logger { center.logger }

        /// Queues fetches: a new observation's first, one a rate limit
        /// delayed, or those a finished batch must run again.
        func enqueueFetches(of drivers: [any ObservationDriving]) {
            center.enqueueFetches(of: drivers)
        }

        /// A fetch finished: see ``ObservationCenter/fetchDidFinish(_:region:failed:startSerial:)``.
        func fetchDidFinish(
            _ driver: some ObservationDriving, region: DatabaseRegion, failed: Bool, startSerial: UInt64
        ) -> Bool {
            center.fetchDidFinish(driver, region: region, failed: failed, startSerial: startSerial)
        }

        /// See ``ObservationCenter/firstPossibleChange(of:after:)``.
        func firstPossibleChange(of driver: some ObservationDriving, after position: UInt64) -> UInt64 {
            center.firstPossibleChange(of: driver, after: position)
        }

        /// A driver's last subscriber left: see ``ObservationCenter/remove(_:)``.
        func remove(_ driver: some ObservationDriving) {
            center.remove(driver)
        }

        /// A driver added (`1`) or removed (`-1`) a subscriber.
        func subscribersDidChange(by delta: Int) {
            center.subscribersDidChange(by: delta)
        }
    }

    /// The way up for the batches and drivers of this center.
    var uplink: Uplink { Uplink(center: self) }

    // MARK: - Requests of the database

    /// A new observation of `request`, whose fetches run on ``fetchQueue``:
    /// what ``DatabaseQueue/observe(_:options:)`` and
    /// ``DatabasePool/observe(_:options:)`` return.
    func observe<R: Queryable>(_ request: R, options: ObservationOptions) -> QueryObservation<R> {
        QueryObservation(request: request, options: options, center: self)
    }

    /// The statistics of the running observation of `request` with
    /// `options`, or `nil`: the driver's counters, and what only the center
    /// knows, the commits it skipped and the region it is indexed under.
    func statistics<R: Queryable>(
        for request: R, options: ObservationOptions = ObservationOptions()
    ) -> ObservationStatistics? {
        let key = DriverSharingKey(request, options: options)
        let found = state.withLock { state -> (driver: any ObservationDriving, commits: Int, region: DatabaseRegion)? in
            guard let id = state.shared[key], let entry = state.entries[id] else { return nil }
            return (entry.driver, Int(state.commitCount - entry.registeredAt), entry.region ?? DatabaseRegion())
        }
        guard let found, let driver = found.driver as? ObservationDriver<R> else { return nil }
        var statistics = driver.statistics
        statistics.changesSkipped = max(0, found.commits - statistics.changesNotified)
        statistics.region = found.region
        return statistics
    }

    /// Fetches `request` once on ``fetchQueue`` and tells what its
    /// observation would watch.
    func explain<R: Queryable>(_ request: R) async throws -> QueryExplanation {
        let region = try await fetchQueue.perform { db in
            let (result, region) = db.fetchRecordingRegion { try request.fetch(db) }
            _ = try result.get()
            return region
        }
        return QueryExplanation(region: region, statistics: statistics(for: request))
    }
}
