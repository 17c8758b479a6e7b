#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Logging
import Synchronization

/// Detects commits by other connections and processes, and the database
/// file being replaced, for one file database.
///
/// A wake-up (inotify, or the fallback poll) queues one check job on the
/// writer connection: `PRAGMA data_version` there changes exactly when
/// another connection committed, so commits made through DBWatch itself
/// (already published precisely by the hooks) are not counted twice. An
/// external commit does not say what it changed: every observation refetches,
/// and deduplication hides the values that did not change.
///
/// A WAL commit raises its inotify event when it writes its frames, before
/// it publishes them in the `-shm` index, and the writer can stay in
/// between for many milliseconds (its `fsync` of the WAL with `synchronous =
/// FULL`, SQLite's default; a busy machine keeping it off a core): a check
/// then sees no new `data_version`, and no event follows the publication.
/// So each event also starts a run of checks, 1 ms later, then 2, 4 … 64 ms
/// apart, then every 64 ms, while a connection holds the WAL write lock
/// (``WALWriteLock``, read off the writer connection), for at most the poll
/// interval: the check made once no connection holds it sees every commit
/// written before. Nothing runs between events, and a writer that holds the
/// lock without writing (an open transaction) starts nothing.
final class ExternalChangeMonitor: Sendable {
    private struct State {
        var checkQueued = false
        /// The run that follows the last file event: its number (an older
        /// run stops), its next step, and when it started.
        var followRun = 0
        var followStep = 0
        var followStart = ContinuousClock.now
        /// When the run's next step is due; `nil` when none is.
        var followDue: ContinuousClock.Instant?
        /// Consecutive checks that a lock made fail (a rollback-journal
        /// writer committing): each is retried after 1, 2, 4 … 64 ms.
        var busyChecks = 0
        var dataVersion: Int64?
        var fileIdentity: FileIdentity?
        var replacementReported = false
        /// Why the last check failed (the file overwritten with garbage,
        /// truncated, unreadable), until a check succeeds again.
        var checkFailure: String?
        var checks = 0
        var followSteps = 0
        var pollTask: Task<Void, Never>?
        var watcher: FileWatcher?
        var isStopped = false
    }

    struct FileIdentity: Equatable {
        let device: UInt64
        let inode: UInt64

        init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    let path: String
    private let inFlightCommits: ExternalChangeDetection.InFlightCommits
    /// How long rechecks may follow one writer: the poll takes over after.
    private let recheckLimit: Duration
    private let center: ObservationCenter
    private let writerQueue: JobQueue
    private let state = Locked(State())
    /// Where the follow-up steps wait: a queue of its own (a thread of its
    /// own when needed), not the global pool that other code may keep busy.
    private let timers = DispatchQueue(label: "dbwatch.external-changes")
    private let logger: Logger

    /// Starts watching `path` from `dataVersion`, the writer connection's
    /// `PRAGMA data_version` read before any observation could fetch.
    init(
        path: String, detection: ExternalChangeDetection, center: ObservationCenter, writerQueue: JobQueue,
        dataVersion: Int64?, logger: Logger
    ) throws {
        self.path = path
        self.inFlightCommits = detection.inFlightCommits
        self.recheckLimit = detection.effectivePollInterval
        self.center = center
        self.writerQueue = writerQueue
        self.logger = logger
        let identity = FileIdentity(path: path)
        var watcher: FileWatcher?
        if detection.usesFileNotifications {
            let (directory, name) = Self.split(path)
            // A rollback journal appears when another connection starts
            // writing and goes away when it commits. A check while it exists
            // would take a read lock inside that transaction and could make a
            // writer without a busy timeout fail, so only its removal counts.
            let names = [
                name: FileWatcher.anyChange, name + "-wal": FileWatcher.anyChange,
                name + "-journal": FileWatcher.removal,
            ]
            watcher = try FileWatcher(directory: directory, names: names) { [weak self] in self?.fileChanged() }
        }
        let interval = detection.effectivePollInterval
        let sleep = detection.sleep
        let pollTask = Task { [weak self] in
            while !Task.isCancelled {
                do { try await sleep(interval) } catch { return }
                guard let self else { return }
                if self.center.hasObservations { self.requestCheck() }
            }
        }
        state.withLock { state in
            state.dataVersion = dataVersion
            state.fileIdentity = identity
            state.watcher = watcher
            state.pollTask = pollTask
        }
    }

    deinit {
        stop()
    }

    /// The number of checks run so far.
    var checkCount: Int { state.withLock { $0.checks } }

    /// The number of steps run so far by the runs that follow file events.
    var followStepCount: Int { state.withLock { $0.followSteps } }

    /// Stops the watcher and the poll.
    func stop() {
        let (watcher, task) = state.withLock { state in
            defer {
                state.isStopped = true
                state.watcher = nil
                state.pollTask = nil
            }
            return (state.watcher, state.pollTask)
        }
        task?.cancel()
        watcher?.stop()
    }

    private static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    /// Queues a check for a file event, and follows the commit the event
    /// may announce until it is published: the first step 1 ms later. An
    /// event during a run leaves it at its pace, so a stream of events (the
    /// app's own writes, a bulk load) costs steps 1, 2, 4 … 64 ms apart, not
    /// one per event.
    func fileChanged() {
        requestCheck()
        let first = inFlightCommits == .settleOnce ? 3 : 1
        let now = ContinuousClock.now
        let run = state.withLock { state -> Int? in
            guard !state.isStopped, state.followDue == nil else { return nil }
            state.followStep = 0
            state.followStart = now
            state.followRun += 1
            state.followDue = now + .milliseconds(first)
            return state.followRun
        }
        if let run { follow(run, after: first) }
    }

    private func follow(_ run: Int, after milliseconds: Int) {
        timers.asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [weak self] in
            self?.followUp(run)
        }
    }

    /// One step of the run that follows a file event: a check, and with the
    /// lock table, another step while a connection holds the WAL write lock
    /// (the check after its release is the last); without the table,
    /// ``blindRechecks`` steps, 1, 2, 4 … 64 ms apart.
    private func followUp(_ run: Int) {
        let lock = inFlightCommits == .whileWriteLockHeld ? WALWriteLock.state(databasePath: path) : .unknown
        let now = ContinuousClock.now
        let (checkNow, delay) = state.withLock { state -> (Bool, Int?) in
            guard state.followRun == run, !state.isStopped else { return (false, nil) }
            state.followSteps += 1
            state.followStep += 1
            let step = state.followStep
            let next: (Bool, Int?)
            switch (inFlightCommits, lock) {
            case (.settleOnce, _):
                next = (true, nil)
            case (.backoff, _), (.whileWriteLockHeld, .unknown):
                next = (true, step < Self.blindRechecks ? 1 << step : nil)
            case (.whileWriteLockHeld, .free):
                // A check queued and not started yet reads after this, so
                // requestCheck() adds none; one already running may read before.
                next = (true, nil)
            case (.whileWriteLockHeld, .held):
                // Checked too: the commit may be published and the lock not
                // yet released (the writer kept off a core in between).
                let within = now - state.followStart < recheckLimit
                next = (true, within ? min(1 << min(step, 16), Self.longestRecheckDelay) : nil)
            }
            state.followDue = next.1.map { now + .milliseconds($0) }
            return next
        }
        if checkNow { requestCheck() }
        if let delay { follow(run, after: delay) }
    }

    /// Queues one check on the writer, unless one is already queued.
    func requestCheck() {
        let queue = state.withLock { state -> Bool in
            guard !state.checkQueued, !state.isStopped else { return false }
            state.checkQueued = true
            return true
        }
        if queue, !writerQueue.push(CheckJob(monitor: self)) {
            state.withLock { $0.checkQueued = false }
        }
    }

    /// Runs on the writer connection, between jobs.
    fileprivate func check(on db: Database) {
        state.withLock { state in
            state.checkQueued = false
            state.checks += 1
        }
        let version: Int64?
        var failure: String?
        var busy = false
        do {
            version = try db.fetchOne(Int64.self, sql: "PRAGMA data_version")
        } catch {
            logger.debug("external change check failed", metadata: ["error": "\(error)"])
            version = nil
            // Another connection holding a lock is no news; anything else
            // (a file overwritten, truncated or unreadable) is.
            let code = (error as? SQLiteError)?.primaryCode
            busy = code == .busy || code == .locked
            if !busy { failure = "\(error)" }
        }
        let identity = FileIdentity(path: path)
        let (committed, replaced) = state.withLock { state -> (Bool, Bool) in
            // A check that starts failing, fails differently or recovers
            // makes every observation refetch, so that each reports what it
            // now gets (the error, or a value again) instead of its last value.
            var committed = false
            if failure != nil || version != nil {
                committed = failure != state.checkFailure
                state.checkFailure = failure
            }
            if let version {
                if let previous = state.dataVersion, previous != version {
                    committed = true
                }
                state.dataVersion = version
            }
            var replaced = false
            if identity != state.fileIdentity && !state.replacementReported {
                replaced = true
                state.replacementReported = true
            }
            return (committed, replaced)
        }
        let busyDelay = state.withLock { state -> Int? in
            guard busy else {
                state.busyChecks = 0
                return nil
            }
            state.busyChecks += 1
            return state.busyChecks <= Self.blindRechecks ? 1 << (state.busyChecks - 1) : nil
        }
        if let busyDelay {
            timers.asyncAfter(deadline: .now() + .milliseconds(busyDelay)) { [weak self] in
                self?.requestCheck()
            }
        }
        if committed {
            var changes = DatabaseChanges()
            changes.affectsEverything = true
            center.didCommit(changes)
        }
        if replaced {
            logger.debug("database file replaced", metadata: ["path": "\(path)"])
            center.databaseFileWasReplaced(DatabaseFileReplacedError(path: path))
        }
    }
}

extension ExternalChangeMonitor {
    /// The longest wait between two rechecks.
    static let longestRecheckDelay = 64
    /// How many rechecks follow an event when the lock table cannot be read,
    /// and retry a check that a lock made fail.
    static let blindRechecks = 7
}

private final class CheckJob: ConnectionJob {
    let monitor: ExternalChangeMonitor

    init(monitor: ExternalChangeMonitor) {
        self.monitor = monitor
    }

    func run(on database: Database) {
        monitor.check(on: database)
    }

    func fail(with error: any Error) {}
}

extension ExternalChangeMonitor {
    /// The monitor a configuration asks for: none for in-memory databases
    /// or when detection is off.
    static func make(
        path: String, configuration: Configuration, center: ObservationCenter, writerQueue: JobQueue,
        writer: Database
    ) throws -> ExternalChangeMonitor? {
        guard let detection = configuration.externalChangeDetection, path != ":memory:", !path.isEmpty else {
            return nil
        }
        center.noteOtherWriters()
        var absolute = path
        if !path.hasPrefix("/") {
            absolute = FileManager.default.currentDirectoryPath + "/" + path
        }
        return try ExternalChangeMonitor(
            path: absolute, detection: detection, center: center, writerQueue: writerQueue,
            dataVersion: try writer.fetchOne(Int64.self, sql: "PRAGMA data_version"), logger: configuration.logger)
    }
}
