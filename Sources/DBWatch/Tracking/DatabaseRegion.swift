/// A table, named by its schema (`main`, `temp` or an attached name) and its
/// name, both lowercased because SQLite names are case-insensitive.
///
/// ```swift
/// let table = TableName("Player")
/// table.description                 // "main.player"
/// ```
public struct TableName: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The schema: `main`, `temp`, or the name of an attached database.
    ///
    /// ```swift
    /// TableName("log", schema: "aux").schema   // "aux"
    /// ```
    public let schema: String
    /// The table name.
    ///
    /// ```swift
    /// TableName("Player").name   // "player"
    /// ```
    public let name: String

    /// Creates a table name: `TableName("player")`, `TableName("log", schema: "aux")`.
    ///
    /// ```swift
    /// region.tables[TableName("player")]   // what the region reads of main.player
    /// ```
    public init(_ name: String, schema: String = "main") {
        self.schema = schema.lowercased()
        self.name = name.lowercased()
    }

    /// `schema.name`
    ///
    /// ```swift
    /// TableName("log", schema: "Aux").description   // "aux.log"
    /// ```
    public var description: String { "\(schema).\(name)" }

    /// Orders by schema, then name.
    ///
    /// ```swift
    /// TableName("log", schema: "aux") < TableName("event")   // true: schema "aux" sorts before "main"
    /// ```
    public static func < (lhs: TableName, rhs: TableName) -> Bool {
        (lhs.schema, lhs.name) < (rhs.schema, rhs.name)
    }
}

/// The columns of one table that a region covers or a change touches.
///
/// Every region that covers a table depends on which rows exist, so
/// inserts and deletes (which touch `.all`) match any of them; an update
/// matches only the regions that read a column it sets.
///
/// ```swift
/// ColumnSet.columns(["name"])   // reads `name` (and which rows exist)
/// ColumnSet.rows                // reads no column: `SELECT count(*) FROM t`
/// ```
public enum ColumnSet: Hashable, Sendable {
    /// Every column.
    case all
    /// These columns (lowercased), and which rows exist.
    case columns(Set<String>)

    /// Only which rows exist: `count(*)`, `SELECT 1 FROM t`.
    ///
    /// ```swift
    /// try db.region(of: "SELECT count(*) FROM player").tables[TableName("player")] == .rows   // true
    /// ```
    public static let rows = ColumnSet.columns([])

    /// Whether the two sets share a column.
    func intersects(_ other: ColumnSet) -> Bool {
        switch (self, other) {
        case (.all, _), (_, .all): return true
        case (.columns(let lhs), .columns(let rhs)): return !lhs.isDisjoint(with: rhs)
        }
    }

    /// The union of the two sets.
    func union(_ other: ColumnSet) -> ColumnSet {
        switch (self, other) {
        case (.all, _), (_, .all): return .all
        case (.columns(let lhs), .columns(let rhs)): return .columns(lhs.union(rhs))
        }
    }
}

/// The part of a database a query reads: tables, and columns within them.
///
/// DBWatch computes it with SQLite's authorizer while statements are
/// prepared. A commit that changes nothing in a query's region does not make
/// the query refetch.
///
/// ```swift
/// let region = try await queue.read { db in
///     try db.region(of: "SELECT name FROM player WHERE score > 10")
/// }
/// region.description   // "main.player(name, score)"
/// ```
public struct DatabaseRegion: Hashable, Sendable, CustomStringConvertible {
    /// What is read of each table. One dictionary, with the rows inline:
    /// every running observation keeps a region.
    private(set) var entries: [TableName: TableRegion]

    /// The tables read, with the columns read in each.
    ///
    /// ```swift
    /// try db.region(of: "SELECT name FROM player WHERE score > 10").tables
    /// // [main.player: .columns(["name", "score"])]
    /// ```
    public var tables: [TableName: ColumnSet] { entries.mapValues(\.columns) }

    /// For the tables read only by primary key (`WHERE id = ?`), the rowids
    /// read. A table of ``tables`` missing here is read whole.
    ///
    /// ```swift
    /// // A running observation of a request that reads "SELECT * FROM player WHERE id = ?" with 1:
    /// pool.statistics(for: PlayerRequest(id: 1))?.region.rowIDs   // [main.player: [1]]
    /// try db.region(of: "SELECT * FROM player WHERE id = 1").rowIDs   // [:]: region(of:) runs nothing
    /// ```
    public var rowIDs: [TableName: Set<Int64>] { entries.compactMapValues { $0.rows?.set } }

    /// The empty region: a query that reads no table (`SELECT 1`).
    ///
    /// ```swift
    /// DatabaseRegion().isEmpty   // true
    /// ```
    public init() {
        self.entries = [:]
    }

    /// A region over whole tables: `DatabaseRegion(tables: [TableName("player")])`.
    ///
    /// ```swift
    /// DatabaseRegion(tables: [TableName("player")]).description   // "main.player(*)"
    /// ```
    public init(tables: some Sequence<TableName>) {
        self.entries = Dictionary(
            tables.map { ($0, TableRegion(columns: .all, rows: nil)) }, uniquingKeysWith: { lhs, _ in lhs })
    }

    /// Whether the region covers no table.
    ///
    /// ```swift
    /// try db.region(of: "SELECT 1").isEmpty   // true
    /// ```
    public var isEmpty: Bool { entries.isEmpty }

    /// Adds `columns` of `table` to the region, for every row, or only for
    /// the rows `rowIDs` names.
    public mutating func insert(_ table: TableName, columns: ColumnSet, rowIDs: Set<Int64>? = nil) {
        insert(table, TableRegion(columns: columns, rows: rowIDs.map(RowSet.init)))
    }

    mutating func insert(_ table: TableName, _ region: TableRegion) {
        if let existing = entries[table] {
            entries[table] = existing.union(region)
        } else {
            entries[table] = region
        }
    }

    /// Restricts an already present `table` to the rows `rowIDs` names.
    mutating func restrict(_ table: TableName, toRowIDs rowIDs: Set<Int64>) {
        guard entries[table] != nil else { return }
        entries[table]!.rows = RowSet(rowIDs)
    }

    /// Adds every table, column and row of `other`.
    public mutating func formUnion(_ other: DatabaseRegion) {
        for (table, region) in other.entries { insert(table, region) }
    }

    /// The union of two regions.
    ///
    /// ```swift
    /// let players = try db.region(of: "SELECT name FROM player")
    /// let teams = try db.region(of: "SELECT count(*) FROM team")
    /// players.union(teams).description   // "main.player(name), main.team(rows)"
    /// ```
    public func union(_ other: DatabaseRegion) -> DatabaseRegion {
        var result = self
        result.formUnion(other)
        return result
    }

    /// `main.player(name, score), main.team(*), main.game(rows)`, sorted,
    /// with `[rowid 1, 2]` for tables read by primary key; `(empty)` for no table.
    ///
    /// ```swift
    /// try db.region(of: "SELECT count(*) FROM team").description   // "main.team(rows)"
    /// ```
    public var description: String {
        if entries.isEmpty { return "(empty)" }
        return entries.keys.sorted().map { table in
            let region = entries[table]!
            var text: String
            switch region.columns {
            case .all: text = "\(table)(*)"
            case .columns(let columns) where columns.isEmpty: text = "\(table)(rows)"
            case .columns(let columns): text = "\(table)(\(columns.sorted().joined(separator: ", ")))"
            }
            if let rows = region.rows {
                text += "[rowid \(rows.set.sorted().map(String.init).joined(separator: ", "))]"
            }
            return text
        }.joined(separator: ", ")
    }
}

/// What a region reads of one table: columns, and rows when only some are.
struct TableRegion: Hashable, Sendable {
    var columns: ColumnSet
    /// `nil`: every row.
    var rows: RowSet?

    func union(_ other: TableRegion) -> TableRegion {
        let rows: RowSet? = if let lhs = self.rows, let rhs = other.rows { lhs.union(rhs) } else { nil }
        return TableRegion(columns: columns.union(other.columns), rows: rows)
    }
}

/// Rowids, without a `Set` allocation for the common single row.
enum RowSet: Hashable, Sendable {
    case one(Int64)
    case many(Set<Int64>)

    init(_ set: Set<Int64>) {
        self = set.count == 1 ? .one(set.first!) : .many(set)
    }

    var set: Set<Int64> {
        switch self {
        case .one(let rowID): return [rowID]
        case .many(let rowIDs): return rowIDs
        }
    }

    func union(_ other: RowSet) -> RowSet {
        RowSet(set.union(other.set))
    }

    /// Whether the two sets share a rowid.
    @inline(__always)
    func intersects(_ other: RowSet) -> Bool {
        switch (self, other) {
        case (.one(let rowID), .one(let otherRowID)): return rowID == otherRowID
        case (.one(let rowID), .many(let set)), (.many(let set), .one(let rowID)): return set.contains(rowID)
        case (.many(let set), .many(let otherSet)): return !set.isDisjoint(with: otherSet)
        }
    }
}
