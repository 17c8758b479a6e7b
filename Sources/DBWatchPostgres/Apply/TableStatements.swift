import DBWatch

/// The SQL that writes one replicated table in SQLite, built once.
///
/// Writes are idempotent where they can be, a second guard besides the
/// skipping of the transactions the initial copy already saw
/// (``CopySnapshot``): an insert is an upsert on the primary key, an update
/// or delete of a missing row changes nothing, and an update that moves a
/// row to a key another row holds replaces it (`UPDATE OR REPLACE`).
struct TableStatements: Sendable {
    let table: SourceTable
    /// `CREATE TABLE`, with the primary key.
    let create: String
    /// `INSERT … ON CONFLICT (key) DO UPDATE` of every column.
    let upsert: String
    /// `UPDATE OR REPLACE … SET` every column `WHERE` key.
    let updateAll: String
    /// `DELETE … WHERE` key.
    let delete: String
    /// `DELETE FROM` the table.
    let truncate: String

    init(_ table: SourceTable) {
        self.table = table
        let name = quoted(table.name)
        let columns = table.columns.map { quoted($0.name) }
        let keys = table.keyColumnIndexes.map { columns[$0] }
        let others = table.columns.indices.filter { !table.columns[$0].isKey }.map { columns[$0] }
        let definitions = table.columns.map { "\(quoted($0.name)) \($0.mapping.declaredType)" }
        create =
            "CREATE TABLE \(name) (\(definitions.joined(separator: ", ")), PRIMARY KEY (\(keys.joined(separator: ", "))))"
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        let onConflict =
            others.isEmpty
            ? "DO NOTHING" : "DO UPDATE SET " + others.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        upsert =
            "INSERT INTO \(name) (\(columns.joined(separator: ", "))) VALUES (\(placeholders)) ON CONFLICT (\(keys.joined(separator: ", "))) \(onConflict)"
        let whereKey = keys.map { "\($0) = ?" }.joined(separator: " AND ")
        updateAll =
            "UPDATE OR REPLACE \(name) SET \(columns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE \(whereKey)"
        delete = "DELETE FROM \(name) WHERE \(whereKey)"
        truncate = "DELETE FROM \(name)"
    }

    /// `UPDATE OR REPLACE` of the given columns only (an update that left a
    /// TOASTed value unchanged).
    func update(columns indexes: [Int]) -> String {
        let assignments = indexes.map { "\(quoted(table.columns[$0].name)) = ?" }.joined(separator: ", ")
        let whereKey = table.keyColumnIndexes.map { "\(quoted(table.columns[$0].name)) = ?" }
            .joined(separator: " AND ")
        return "UPDATE OR REPLACE \(quoted(table.name)) SET \(assignments) WHERE \(whereKey)"
    }
}
