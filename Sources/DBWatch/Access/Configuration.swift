import Logging

/// How a ``DatabaseQueue`` or ``DatabasePool`` opens and uses its connections.
///
/// ```swift
/// var configuration = Configuration()
/// configuration.busyTimeout = .seconds(2)
/// configuration.maximumReaderCount = 4
/// configuration.logger = Logger(label: "app.db")
/// let pool = try DatabasePool(path: "/var/lib/app/db.sqlite", configuration: configuration)
/// ```
public struct Configuration: Sendable {
    /// Opens every connection read-only; writes fail with ``ResultCode/readOnly``.
    /// A missing file is an error (``ResultCode/cannotOpen``), never
    /// created. Default `false`.
    public var readOnly = false

    /// How long a statement waits for another connection's lock before
    /// failing with ``ResultCode/busy``. Default 5 seconds; longer than
    /// `Int32.max` milliseconds (about 24 days) counts as that, negative as 0.
    ///
    /// Cancelling the task ends the wait at once: the access throws
    /// `CancellationError`, and opening a queue or pool throws
    /// ``ResultCode/busy``. DBWatch waits with its own busy handler, so
    /// `PRAGMA busy_timeout` reads 0; setting it replaces that handler.
    public var busyTimeout: Duration = .seconds(5)

    /// Enforces foreign keys (`PRAGMA foreign_keys = ON`). Default `true`.
    public var foreignKeysEnabled = true

    /// The number of reader connections of a ``DatabasePool``. Default 4;
    /// a value under 1 gives one reader.
    public var maximumReaderCount = 4

    /// Interprets paths that start with `file:` as SQLite URIs. Default
    /// `false`: every path is a plain file path, so `file:x?mode=rwc` names a
    /// file in the folder `file:` and no URI parameter takes effect.
    ///
    /// ```swift
    /// configuration.allowsURIFilenames = true
    /// let queue = try DatabaseQueue(path: "file:/var/lib/app/db.sqlite?mode=ro", configuration: configuration)
    /// ```
    public var allowsURIFilenames = false

    /// Lets a `write` run on the calling task's thread when the writer is
    /// idle: no job running or waiting on it. That saves two thread hops
    /// per write, more than a small insert costs. Default `true`; applies to
    /// a ``DatabasePool`` and to an in-memory ``DatabaseQueue``.
    ///
    /// The caller's thread never waits for a lock or a disk sync there: a
    /// write lock held by another connection sends the write to the
    /// writer's thread, which waits, and WAL checkpoints run on the
    /// writer's thread. A writer on which a `PRAGMA` set `journal_mode`,
    /// `synchronous`, `wal_autocheckpoint`, `busy_timeout` or
    /// `locking_mode`, or an `ATTACH` ran, runs every later write on its
    /// own thread. What does run there is the closure and SQLite's work
    /// for it, so turn this off if single writes are long (a large import in
    /// one transaction) and must not hold a cooperative thread meanwhile.
    public var writesOnCallerThread = true

    /// Detects commits by other connections and processes on a file
    /// database, so observations refresh after them too. Default `nil`
    /// (off): only writes made through this queue or pool are observed.
    /// See ``ExternalChangeDetection``.
    public var externalChangeDetection: ExternalChangeDetection?

    /// How long `close()` of ``DatabaseQueue`` and ``DatabasePool`` (and
    /// releasing the last reference) let the work already running or
    /// queued finish: the refetches of commits made before the close, and
    /// accesses that started or were queued before it. Default 1 second;
    /// negative counts as zero.
    ///
    /// When it ends, the close interrupts every statement still running
    /// (`sqlite3_interrupt`) and ends every wait for a lock; later
    /// statements of that work fail at once; and work that has not started
    /// fails without running. Each fails with ``SQLiteError`` "database is
    /// closed" (code ``ResultCode/misuse``); a write still running is rolled
    /// back as a whole. A close with nothing running returns at once.
    /// Raise it to let a long import finish at shutdown.
    public var closeGracePeriod: Duration = .seconds(1)

    /// Where DBWatch logs (a swift-log `Logger`: `import Logging`): debug
    /// and trace levels, except that an observation whose fetch starts
    /// failing logs a warning (with the request's `String(describing:)` and
    /// the error), and one that recovers logs at info level: once per
    /// change, never per repeated identical failure. Default: a logger
    /// labelled `dbwatch` that goes wherever the process bootstrapped logging.
    public var logger = Logger(label: "dbwatch")

    /// The default configuration: 5 s busy timeout, foreign keys on, 4
    /// readers, writes on the caller's thread when the writer is idle.
    public init() {}

    /// Called when a connection starts waiting for another connection's
    /// lock (see ``busyTimeout``), on the thread that waits: to tell a user
    /// why nothing happens yet, or to count lock contention. Keep it short;
    /// it must not use the database. Default `nil`.
    ///
    /// ```swift
    /// configuration.lockWaitWillStart = { logger.notice("waiting for another process's lock") }
    /// ```
    public var lockWaitWillStart: (@Sendable () -> Void)?

    var busyTimeoutMilliseconds: Int32 {
        // Clamped before multiplying: `.seconds(.max)` means "as long as SQLite allows".
        let (seconds, attoseconds) = busyTimeout.components
        if seconds > Int64(Int32.max) / 1000 { return .max }
        return Int32(clamping: max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
    }
}
