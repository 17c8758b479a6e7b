/// A type that builds itself from the columns of a fetched row, read in
/// place: the fast alternative to `Decodable` for queries that return many
/// rows.
///
/// `fetchAll`, `fetchOne` and `fetchCursor` call `init(row:)` once per row.
/// Reading columns by position skips the standard library's `Decodable`
/// machinery and the lookup of each property's column by name (see
/// BENCHMARKS.md, workload 6). A type that is also `Decodable` is fetched
/// through `init(row:)`, also by code generic over `T: Decodable` alone.
///
/// ```swift
/// struct Player: FetchableRecord {
///     var id: Int64
///     var name: String
///     var score: Int
///
///     init(row: RowView) throws {
///         id = try row.decode(Int64.self, at: 0)
///         name = try row.decode(String.self, at: 1)
///         score = try row.decode(Int.self, at: "score")
///     }
/// }
/// let players = try db.fetchAll(Player.self, sql: "SELECT id, name, score FROM player")
/// ```
public protocol FetchableRecord {
    /// Reads one row. The row is valid only during this call: keep the
    /// values, not the row.
    init(row: RowView) throws
}
