/// Counters of one running observation, to check what it costs and prove
/// its precision.
///
/// ```swift
/// let stats = queue.statistics(for: TopPlayers())!
/// #expect(stats.changesSkipped > 0)  // writes to other tables caused no refetch
/// ```
public struct ObservationStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Fetches run, including the first.
    ///
    /// ```swift
    /// pool.statistics(for: TopPlayers())?.fetches   // 1 once the first value is fetched
    /// ```
    public var fetches = 0
    /// Results delivered to subscribers (after deduplication), values and
    /// errors alike.
    ///
    /// ```swift
    /// stats.valuesDelivered   // below stats.fetches when a refetch gave the same value again
    /// ```
    public var valuesDelivered = 0
    /// Commits that touched the observed region and asked for a refetch.
    ///
    /// ```swift
    /// try await pool.write { db in try db.execute(sql: "UPDATE player SET score = 0") }
    /// pool.statistics(for: TopPlayers())?.changesNotified   // 1
    /// ```
    public var changesNotified = 0
    /// Commits since the observation started that changed rows, none of them
    /// in its region, and cost it nothing (a commit that changed nothing is
    /// not counted).
    ///
    /// ```swift
    /// try await pool.write { db in try db.execute(sql: "INSERT INTO team (name) VALUES ('Red')") }
    /// pool.statistics(for: TopPlayers())?.changesSkipped   // 1: TopPlayers reads no team
    /// ```
    public var changesSkipped = 0
    /// The region of the last fetch. After a failed fetch, every commit
    /// refetches the observation, whatever this region holds, until a
    /// fetch succeeds.
    ///
    /// ```swift
    /// pool.statistics(for: TopPlayers())?.region.description   // "main.player(id, name, score)"
    /// ```
    public var region = DatabaseRegion()

    /// Creates empty counters: `ObservationStatistics()`.
    ///
    /// ```swift
    /// let empty = ObservationStatistics()   // every counter 0, an empty region
    /// ```
    public init() {}

    /// `fetches: 3, delivered: 2, notified: 2, skipped: 10, region: main.player(*)`
    ///
    /// ```swift
    /// ObservationStatistics().description   // "fetches: 0, delivered: 0, notified: 0, skipped: 0, region: (empty)"
    /// ```
    public var description: String {
        "fetches: \(fetches), delivered: \(valuesDelivered), notified: \(changesNotified), "
            + "skipped: \(changesSkipped), region: \(region)"
    }
}
