/// How a file database detects commits made by other connections and
/// processes (a worker, a cron job, the `sqlite3` shell).
///
/// ```swift
/// var configuration = Configuration()
/// configuration.externalChangeDetection = ExternalChangeDetection(pollInterval: .seconds(2))
/// let pool = try DatabasePool(path: "/var/lib/app/db.sqlite", configuration: configuration)
/// // Observations on `pool` now also refresh after other processes commit.
/// ```
///
/// `PRAGMA data_version` on the writer connection, which stays open as long
/// as the database, is the truth: it changes exactly when another
/// connection commits. inotify on the database folder wakes the check
/// without polling; a slow poll covers what inotify misses (network file
/// systems, overflowing event queues). A WAL commit raises its event before
/// it is published: while another connection still holds the WAL write
/// lock, the check is repeated 1, 2, 4 … 64 ms apart, for at most the poll
/// interval, until it is released.
public struct ExternalChangeDetection: Sendable {
    /// The fallback poll interval. Default 1 second; shorter than
    /// ``minimumPollInterval`` (or negative) counts as that minimum.
    ///
    /// ```swift
    /// var detection = ExternalChangeDetection()
    /// detection.pollInterval = .milliseconds(250)   // on NFS, where inotify sees no other machine's writes
    /// ```
    public var pollInterval: Duration
    /// The interval the poll actually uses: at least ``minimumPollInterval``.
    var effectivePollInterval: Duration { max(pollInterval, Self.minimumPollInterval) }

    /// The shortest poll interval, 10 ms: a shorter one (or zero) would keep
    /// a core busy checking.
    ///
    /// ```swift
    /// let detection = ExternalChangeDetection(pollInterval: .zero)   // polls every 10 ms
    /// ```
    public static let minimumPollInterval: Duration = .milliseconds(10)
    /// Whether inotify wakes the check. Default `true`; with `false`, only
    /// the poll detects external commits.
    ///
    /// ```swift
    /// let detection = ExternalChangeDetection(usesFileNotifications: false)   // the poll only
    /// ```
    public var usesFileNotifications: Bool
    let sleep: @Sendable (Duration) async throws -> Void

    /// How a check follows a commit that another connection has written to
    /// the WAL but not yet published in the `-shm` index.
    @_spi(Benchmarks)
    public enum InFlightCommits: Sendable {
        /// One more check 3 ms after an event, as before the lock table was
        /// read (see <doc:ExternalChanges>): a writer kept off a core longer
        /// than that leaves its commit to the poll.
        case settleOnce
        /// Checks again 1, 2, 4 … 64 ms apart (7 times) after every event,
        /// whatever the lock table says (what runs when it cannot be read).
        case backoff
        /// Checks 1 ms after an event, then 2, 4 … 64 ms apart (then every
        /// 64 ms, within the poll interval) while a connection holds the WAL
        /// write lock; the check made once none does is the last.
        case whileWriteLockHeld
    }

    /// How in-flight commits are followed; the benchmarks compare the policies.
    @_spi(Benchmarks)
    public var inFlightCommits: InFlightCommits = .whileWriteLockHeld

    /// Creates detection options.
    ///
    /// - Parameters:
    ///   - pollInterval: how often to check without a file notification.
    ///   - usesFileNotifications: whether inotify wakes the check at once.
    ///   - clock: the clock of the poll (tests inject a manual clock).
    ///
    /// ```swift
    /// configuration.externalChangeDetection = ExternalChangeDetection(pollInterval: .seconds(5))
    /// ```
    public init<C: Clock>(
        pollInterval: Duration = .seconds(1), usesFileNotifications: Bool = true, clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        self.pollInterval = pollInterval
        self.usesFileNotifications = usesFileNotifications
        self.sleep = { duration in try await clock.sleep(for: duration, tolerance: nil) }
    }
}

/// The database file was replaced (renamed over, or deleted and recreated)
/// while open: the connections still read the old file. Reopen the database.
///
/// Observations deliver it when external change detection is on. Writes
/// throw it whenever the file is no longer at its path (deleted, renamed,
/// or renamed over), detection on or not: they would otherwise commit into
/// a file that no path names.
///
/// Recognise it by its type: `catch let error as DatabaseFileReplacedError`.
///
/// ```swift
/// for await result in pool.observe(TopPlayers()).results {
///     if case .failure(let error as DatabaseFileReplacedError) = result { reopen(error.path) }
/// }
/// ```
public struct DatabaseFileReplacedError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The path of the replaced file.
    ///
    /// ```swift
    /// error.path   // absolute: "/srv/app/db.sqlite" for a pool opened on "db.sqlite" in /srv/app
    /// ```
    public let path: String

    /// `the database file /x/db.sqlite was replaced or deleted; reopen it`
    ///
    /// ```swift
    /// "\(error)"   // "the database file /var/lib/app/db.sqlite was replaced or deleted; reopen it"
    /// ```
    public var description: String { "the database file \(path) was replaced or deleted; reopen it" }
}
