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
final class ExternalChangeMonitor: Sendable {
    private struct State {
        var checkQueued = false
        var dataVersion: Int64?
        var fileIdentity: FileIdentity?
        var replacementReported = false
        /// Why the last check failed (the file overwritten with garbage,
        /// truncated, unreadable), until a check succeeds again.
        var checkFailure: String?
        var externalCommits = 0
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
            watcher = try FileWatcher(directory: directory, names: names) { [weak self] in self?.requestCheck() }
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
        state.withLock { $0.checkQueued = false }
        let version: Int64?
        var failure: String?
        do {
            version = try db.fetchOne(Int64.self, sql: "PRAGMA data_version")
        } catch {
            logger.debug("external change check failed", metadata: ["error": "\(error)"])
            version = nil
            // Another connection holding a lock is no news; anything else
            // (a file overwritten, truncated or unreadable) is.
            let code = (error as? SQLiteError)?.primaryCode
            if code != .busy && code != .locked { failure = "\(error)" }
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
