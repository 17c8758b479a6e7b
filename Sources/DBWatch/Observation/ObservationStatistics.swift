/// Counters of one running observation, to check what it costs and prove
/// its precision.
///
/// ```swift
/// let stats = queue.statistics(for: TopPlayers())!
/// #expect(stats.changesSkipped > 0)  // writes to other tables caused no refetch
/// ```
public struct ObservationStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Fetches run, including the first.
    public var fetches = 0
    /// Values delivered to subscribers (after deduplication).
    public var valuesDelivered = 0
    /// Commits that touched the observed region and asked for a refetch.
    public var changesNotified = 0
    /// Commits since the observation started that did not touch its region
    /// and cost it nothing.
    public var changesSkipped = 0
    /// The region of the last fetch.
    public var region = DatabaseRegion()

    /// Creates empty counters: `ObservationStatistics()`.
    public init() {}

    /// `fetches: 3, delivered: 2, notified: 2, skipped: 10, region: main.player(*)`
    public var description: String {
        "fetches: \(fetches), delivered: \(valuesDelivered), notified: \(changesNotified), "
            + "skipped: \(changesSkipped), region: \(region)"
    }
}
