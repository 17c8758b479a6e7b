/// What an observed request watches: the tables and columns its fetch
/// reads, and the counters of its running observation, if any.
///
/// ```swift
/// let explanation = try await pool.explain(TopPlayers())
/// logger.info("\(explanation)")  // Observes main.player: columns id, name, score.
/// ```
public struct QueryExplanation: Sendable, CustomStringConvertible {
    /// The region a fetch reads now.
    ///
    /// ```swift
    /// try await pool.explain(TopPlayers()).region.tables.keys   // [main.player]
    /// ```
    public let region: DatabaseRegion
    /// The counters of the running observation of this request, if one runs.
    ///
    /// ```swift
    /// try await pool.explain(TopPlayers()).statistics?.fetches   // nil unless TopPlayers() is being observed
    /// ```
    public let statistics: ObservationStatistics?

    /// One line per table: `Observes main.player: columns name, score.`,
    /// `Observes main.player: all columns.` or
    /// `Observes main.player: which rows exist (inserts and deletes), no column.`
    ///
    /// ```swift
    /// let explanation = try await pool.explain(TopPlayers())
    /// explanation.description   // "Observes main.player: columns id, name, score.", then "Running: …" if observed
    /// ```
    public var description: String {
        if region.isEmpty { return "Observes no table: the value never changes." }
        var lines = region.tables.keys.sorted().map { table -> String in
            switch region.tables[table]! {
            case .all: return "Observes \(table): all columns."
            case .columns(let columns) where columns.isEmpty:
                return "Observes \(table): which rows exist (inserts and deletes), no column."
            case .columns(let columns): return "Observes \(table): columns \(columns.sorted().joined(separator: ", "))."
            }
        }
        if let statistics { lines.append("Running: \(statistics).") }
        return lines.joined(separator: "\n")
    }
}
