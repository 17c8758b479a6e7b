/// A replicated PostgreSQL table as the replica knows it: its OID, name,
/// columns and key. The replica stores it in its SQLite file, and stops with
/// ``ReplicaError/Code/schemaChanged`` when PostgreSQL's description of the
/// table stops matching it.
struct SourceTable: Sendable, Equatable, Codable {
    /// The table's OID (`pg_class.oid`): a dropped and re-created table has
    /// another.
    var oid: UInt32
    /// Its schema, `public` by default.
    var schema: String
    /// Its name, which is also the SQLite table's name.
    var name: String
    /// Its columns, in order.
    var columns: [SourceColumn]

    /// `schema.name`, as errors and logs name the table.
    var qualifiedName: String { "\(schema).\(name)" }

    /// `"schema"."name"`, as SQL names the table whatever its case or
    /// characters.
    var sqlName: String { "\(quoted(schema)).\(quoted(name))" }

    /// The positions of the primary key's columns in ``columns``.
    var keyColumnIndexes: [Int] { columns.indices.filter { columns[$0].isKey } }

    /// Whether a relation message of the change feed describes this table
    /// as it was when the replica started: same OID, same columns in the
    /// same order with the same types, and as key the primary key or, for
    /// a table of `REPLICA IDENTITY FULL`, every column (its updates and
    /// deletes send the whole old row, primary key included).
    func matches(_ relation: PgOutputMessage.Relation) -> Bool {
        let isFullIdentity = relation.columns.allSatisfy(\.isKey)
        return relation.id == oid && relation.columns.count == columns.count
            && zip(relation.columns, columns).allSatisfy { described, known in
                described.name == known.name && described.typeOID == known.typeOID
                    && (described.isKey == known.isKey || isFullIdentity)
            }
    }

    /// What differs between this table and `current`, for an error message;
    /// `nil` when the shapes are the same.
    func difference(from current: SourceTable) -> String? {
        if current.oid != oid { return "it was dropped and created again" }
        let before = columns.map(\.summary)
        let after = current.columns.map(\.summary)
        guard before != after else { return nil }
        return "its columns were (\(before.joined(separator: ", "))) and are now (\(after.joined(separator: ", ")))"
    }
}

/// One column of a ``SourceTable``.
struct SourceColumn: Sendable, Equatable, Codable {
    /// The column's name.
    var name: String
    /// The OID of its type as `pg_attribute` gives it (a domain's own OID).
    var typeOID: UInt32
    /// The type's name, for messages.
    var typeName: String
    /// Whether it is part of the primary key.
    var isKey: Bool
    /// How its values are stored in SQLite.
    var mapping: ColumnMapping

    /// `name type` with ` key` for a key column.
    var summary: String { "\(name) \(typeName)\(isKey ? " key" : "")" }
}
