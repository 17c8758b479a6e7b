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
/// it publishes them in the `-shm` index, and a writer kept off a core (a
/// busy machine) can stay in between for many milliseconds: a check then
/// sees no new `data_version`, and no event follows the publication. So a
/// check that finds another connection still holding the WAL write lock
/// (``WALWriteLock``) checks again after 1, 2, 4 … 64 ms, then every 64 ms,
/// until the lock is released, for at most the poll interval after the
/// event. Nothing runs while no writer holds the lock, and a writer that
/// holds it without writing (an open transaction) starts nothing.
final class ExternalChangeMonitor: Sendable {
    private struct State {
        var checkQueued = false
        /// A file event came since the last check started: the rechecks
        /// start again from the shortest delay.
        var eventSinceCheck = false
        /// The rechecks run so far in this run (the next waits `1 << attempt`
        /// ms, at most 64), and when the run started; `nil` when none runs.
        var recheckAttempt = 0
        var recheckStart: ContinuousClock.Instant?
        /// Only the latest scheduled recheck runs; earlier ones are stale.
        var recheckGeneration = 0
        var dataVersion: Int64?
        var fileIdentity: FileIdentity?
        var replacementReported = false
        /// Why the last check failed (the file overwritten with garbage,
        /// truncated, unreadable), until a check succeeds again.
        var checkFailure: String?
        var externalCommits = 0
        var checks = 0
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

    /// The number of external commits detected so far.
    var externalCommitCount: Int { state.withLock { $0.externalCommits } }

    /// The number of checks run so far.
    var checkCount: Int { state.withLock { $0.checks } }

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

    /// Queues a check for a file event: it restarts the rechecks from 1 ms.
    func fileChanged() {
        state.withLock { $0.eventSinceCheck = true }
        requestCheck()
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
        let afterEvent = state.withLock { state -> Bool in
            state.checkQueued = false
            state.checks += 1
            defer { state.eventSinceCheck = false }
            return state.eventSinceCheck
        }
        // The lock before `data_version`: if no connection holds it now, every
        // commit whose frames were written before is published, and the read
        // below sees it; a commit written after raises an event of its own.
        let writeLock = inFlightCommits == .whileWriteLockHeld ? WALWriteLock.state(databasePath: path) : .unknown
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
                    state.externalCommits += 1
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
        scheduleRecheck(afterEvent: afterEvent, inFlight: writeLock == .unknown ? nil : writeLock == .held || busy)
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
    /// How many rechecks follow an event when the lock table cannot be read.
    static let blindRechecks = 7

    /// Decides whether, and when, to check again after a check.
    ///
    /// - Parameters:
    ///   - afterEvent: the check followed a file event.
    ///   - inFlight: whether a connection held the write lock (or a lock made
    ///     the check fail); `nil` when the lock table cannot be read, where
    ///     every event is followed by ``blindRechecks`` rechecks.
    private func scheduleRecheck(afterEvent: Bool, inFlight: Bool?) {
        let now = ContinuousClock.now
        let next = state.withLock { state -> (delay: Int, generation: Int)? in
            if afterEvent {
                state.recheckAttempt = 0
                state.recheckStart = now
            }
            let delay: Int?
            switch (inFlightCommits, inFlight) {
            case (.settleOnce, _):
                delay = afterEvent ? 3 : nil
            case (.backoff, _), (.whileWriteLockHeld, nil):
                let running = state.recheckStart != nil && state.recheckAttempt < Self.blindRechecks
                delay = running ? 1 << state.recheckAttempt : nil
            case (.whileWriteLockHeld, false?):
                delay = nil
            case (.whileWriteLockHeld, true?):
                // Only an event starts a run: a writer that keeps its lock
                // without writing (an open transaction) is left to the poll.
                guard let start = state.recheckStart, now - start < recheckLimit else {
                    delay = nil
                    break
                }
                delay = min(1 << min(state.recheckAttempt, 16), Self.longestRecheckDelay)
            }
            guard let delay, !state.isStopped else {
                state.recheckAttempt = 0
                state.recheckStart = nil
                return nil
            }
            state.recheckAttempt += 1
            state.recheckGeneration += 1
            return (delay, state.recheckGeneration)
        }
        guard let next else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(next.delay)) { [weak self] in
            guard let self else { return }
            if self.state.withLock({ $0.recheckGeneration == next.generation }) { self.requestCheck() }
        }
    }
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
        var absolute = path
        if !path.hasPrefix("/") {
            absolute = FileManager.default.currentDirectoryPath + "/" + path
        }
        return try ExternalChangeMonitor(
            path: absolute, detection: detection, center: center, writerQueue: writerQueue,
            dataVersion: try writer.fetchOne(Int64.self, sql: "PRAGMA data_version"), logger: configuration.logger)
    }
}
