import DBWatch

/// One value of a watched query: its column names, its rows, and the
/// columns that identify a row when the result has such a key.
///
/// Values are `Hashable`, so an observation delivers a new one only when
/// the result changed.
///
/// ```swift
/// let result = QueryResult(columns: ["id", "name"], rows: [[.integer(1), .text("Arthur")]], keyColumns: [0])
/// result.key(of: result.rows[0])   // [.integer(1)]
/// ```
struct QueryResult: Hashable, Sendable {
    /// The result column names, in order.
    var columns: [String]
    /// The rows, each with one value per column.
    var rows: [[DatabaseValue]]
    /// The positions of the columns that hold the primary key (or rowid) of
    /// one table, when the result has them all and they are unique in
    /// `rows`; `nil` otherwise.
    var keyColumns: [Int]?

    /// Creates a result, dropping `keyColumns` when they do not identify the
    /// rows (repeated or out of range).
    init(columns: [String], rows: [[DatabaseValue]], keyColumns: [Int]?) {
        self.columns = columns
        self.rows = rows
        if let keyColumns, !keyColumns.isEmpty, keyColumns.allSatisfy({ columns.indices.contains($0) }) {
            let keys = Set(rows.map { row in keyColumns.map { row[$0] } })
            self.keyColumns = keys.count == rows.count ? keyColumns : nil
        } else {
            self.keyColumns = nil
        }
    }

    /// The key of `row`, or `nil` when the result has no key.
    func key(of row: [DatabaseValue]) -> [DatabaseValue]? {
        keyColumns.map { columns in columns.map { row[$0] } }
    }

    /// The names of the key columns, or `nil`.
    var keyColumnNames: [String]? {
        keyColumns.map { $0.map { columns[$0] } }
    }
}

extension QueryResult {
    /// The value as `watch --format json` and `serve` show it:
    /// `{"columns": […], "rows": [[…], …]}`.
    ///
    /// ```swift
    /// result.json.rendered()   // {"columns":["name","score"],"rows":[["Arthur",100]]}
    /// ```
    var json: JSON { .object(["columns": columnsJSON, "rows": QueryResult.rowsJSON(rows)]) }

    /// The column names, a JSON array of strings.
    var columnsJSON: JSON { .array(columns.map(JSON.string)) }

    /// Rows as a JSON array of arrays (see ``JSON/init(_:)`` for each value).
    static func rowsJSON(_ rows: [[DatabaseValue]]) -> JSON { .array(rows.map { .array($0.map(JSON.init)) }) }
}
