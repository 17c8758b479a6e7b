import DBWatch

/// A user's SQL as an observed request: it runs under the untrusted-SQL
/// policy (reads only, within a time limit), and its value says which
/// columns identify a row, for `--changes`.
///
/// ```swift
/// let query = WatchedQuery(
///     sql: "SELECT * FROM player WHERE score > ?", arguments: [10], timeLimit: .seconds(5),
///     maximumResultSize: 100_000_000)
/// for await result in pool.observe(query).results { … }
/// ```
struct WatchedQuery: Queryable {
    /// An empty result.
    static var defaultValue: QueryResult { QueryResult(columns: [], rows: [], keyColumns: nil) }

    /// The SQL, one statement.
    let sql: String
    /// The values of its `?` parameters.
    let arguments: StatementArguments
    /// How long one fetch may run.
    let timeLimit: Duration
    /// The largest result, in bytes (see ``UntrustedSQLPolicy/maximumResultSize``).
    let maximumResultSize: Int

    /// The policy the query runs under.
    var policy: UntrustedSQLPolicy {
        UntrustedSQLPolicy(timeLimit: timeLimit, maximumResultSize: maximumResultSize)
    }

    /// Fetches the rows under ``UntrustedSQLPolicy``, then finds the key
    /// columns from the statement's column origins.
    func fetch(_ db: Database) throws -> QueryResult {
        let (rows, columns, origins) = try db.withUntrustedSQL(policy) {
            let rows = try db.fetchAll(sql: sql, arguments: arguments)
            let statement = try db.cachedStatement(sql: sql)
            return (rows.map(\.values), statement.columnNames, statement.columnOrigins)
        }
        let keyColumns = try? WatchedQuery.keyColumns(origins: origins, in: db)
        return QueryResult(columns: columns, rows: rows, keyColumns: keyColumns ?? nil)
    }

    /// The positions of the result columns that hold the whole primary key
    /// of one table (its declared primary key columns, or its rowid when it
    /// declares none); the first such table in column order wins.
    static func keyColumns(origins: [ColumnOrigin?], in db: Database) throws -> [Int]? {
        var tables: [ColumnOriginTable] = []
        for origin in origins.compactMap({ $0 }) {
            let table = ColumnOriginTable(schema: origin.schema, table: origin.table)
            if !tables.contains(table) { tables.append(table) }
        }
        for table in tables {
            let info = try db.fetchAll(
                sql: "PRAGMA \(quoted(table.schema)).table_info(\(quoted(table.table)))")
            let primaryKey =
                info
                .compactMap { row -> (position: Int64, name: String)? in
                    guard case .integer(let position) = row["pk"] ?? .null, position > 0,
                        let name = String.fromDatabaseValue(row["name"] ?? .null)
                    else { return nil }
                    return (position, name.lowercased())
                }
                .sorted { $0.position < $1.position }
                .map(\.name)
            func position(of column: (ColumnOrigin) -> Bool) -> Int? {
                origins.firstIndex { origin in
                    guard let origin, origin.schema == table.schema, origin.table == table.table else { return false }
                    return column(origin)
                }
            }
            if primaryKey.isEmpty {
                let rowid = position {
                    $0.isPrimaryKey && ["rowid", "oid", "_rowid_"].contains($0.column.lowercased())
                }
                if let rowid { return [rowid] }
            } else {
                let positions = primaryKey.map { name in position { $0.column.lowercased() == name } }
                if positions.allSatisfy({ $0 != nil }) { return positions.compactMap { $0 } }
            }
        }
        return nil
    }

    /// `name` as a quoted SQL identifier.
    static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// A table named by a column origin.
private struct ColumnOriginTable: Equatable {
    let schema: String
    let table: String
}
