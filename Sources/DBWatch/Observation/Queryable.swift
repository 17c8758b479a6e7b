/// A request for a value that DBWatch keeps up to date: declare it once,
/// observe it with `observe(_:)` on a ``DatabaseQueue`` or ``DatabasePool``.
///
/// ```swift
/// struct TopPlayers: Queryable {
///     static let defaultValue: [Player] = []
///     var limit = 10
///     func fetch(_ db: Database) throws -> [Player] {
///         try db.fetchAll(Player.self,
///             sql: "SELECT * FROM player ORDER BY score DESC LIMIT ?", arguments: [limit])
///     }
/// }
///
/// for try await players in pool.observe(TopPlayers()) { … }
/// ```
///
/// The request is `Hashable`: identical requests observed at the same time
/// share one fetch per change.
///
/// A generic request type cannot declare `static let defaultValue` (Swift
/// has no stored static properties in generic types): declare it computed.
///
/// ```swift
/// struct AllRows<Record: Decodable & Hashable & Sendable>: Queryable {
///     static var defaultValue: [Record] { [] }
///     var table: String
///     func fetch(_ db: Database) throws -> [Record] {
///         try db.fetchAll(Record.self, sql: "SELECT * FROM \(table)")
///     }
/// }
/// ```
public protocol Queryable: Hashable, Sendable {
    /// The fetched value.
    associatedtype Value: Sendable

    /// The value a consumer holds before any fetch succeeded (as in
    /// GRDBQuery's `@Query`), for example `[]`: what ``LiveQuery/value``
    /// reads until then. It is never delivered as a fetched value. In a
    /// generic type, write it computed: `static var defaultValue: [Record] { [] }`.
    static var defaultValue: Value { get }

    /// Fetches the value. Runs in a read-only transaction on one committed
    /// state; what it reads (tables, columns) is the region DBWatch watches.
    ///
    /// When it throws (a failed query, or an error of its own before any
    /// SQL ran), the observation refetches after every commit until a fetch
    /// succeeds. When it succeeds without reading any table (a constant),
    /// no change of data refetches it: its value cannot change.
    func fetch(_ db: Database) throws -> Value
}
