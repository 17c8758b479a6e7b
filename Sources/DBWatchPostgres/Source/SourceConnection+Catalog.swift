import PostgresNIO

extension SourceConnection {
    /// The tables a publication publishes, as `schema.name`.
    func tablesOfPublication(_ publication: String) async throws -> [String]? {
        let exists = try await text("SELECT pubname::text FROM pg_publication WHERE pubname = \(publication)")
        guard exists != nil else { return nil }
        return try await texts(
            """
            SELECT format('%I.%I', schemaname, tablename) FROM pg_publication_tables \
            WHERE pubname = \(publication) ORDER BY 1
            """
        ).compactMap { $0 }
    }

    /// The table `name` (as SQL names it: `player`, `sales.orders`,
    /// `"Player"`), as the catalog describes it now; `nil` when there is no
    /// such table.
    ///
    /// - Throws: ``ReplicaError`` `unsupportedType` or `noPrimaryKey`.
    func describeTable(_ name: String) async throws -> SourceTable? {
        let rows = try await connection.query(
            """
            SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, a.attname::text,
                a.atttypid::int8, format_type(a.atttypid, NULL), t.typtype::text, t.typbasetype::int8,
                coalesce(a.attnum = ANY(i.indkey::int2[]), false)
            FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            JOIN pg_type t ON t.oid = a.atttypid
            LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
            WHERE c.oid = to_regclass(\(name))
            ORDER BY a.attnum
            """,
            logger: logger)
        var table: SourceTable?
        for try await row in rows {
            let (oid, schema, relation, kind, column, typeOID, typeName, typeKind, baseType, isKey) = try row.decode(
                (Int64, String, String, String, String, Int64, String, String, Int64, Bool).self)
            if table == nil {
                guard kind == "r" else {
                    throw ReplicaError(
                        .invalidConfiguration, table: "\(schema).\(relation)",
                        "\(schema).\(relation) is not an ordinary table (relkind \(kind))")
                }
                table = SourceTable(oid: UInt32(oid), schema: schema, name: relation, columns: [])
            }
            let mapping: ColumnMapping? =
                switch typeKind {
                case "e": .enumeration(typeOID: UInt32(typeOID))
                case "d": ColumnMapping(typeOID: UInt32(baseType))
                default: ColumnMapping(typeOID: UInt32(typeOID))
                }
            guard let mapping else {
                throw ReplicaError(
                    .unsupportedType, table: "\(schema).\(relation)", column: column,
                    "\(schema).\(relation).\(column) has type \(typeName), which the replica cannot store in SQLite")
            }
            table?.columns.append(
                SourceColumn(
                    name: column, typeOID: UInt32(typeOID), typeName: typeName, isKey: isKey, mapping: mapping))
        }
        if let table, table.keyColumnIndexes.isEmpty {
            throw ReplicaError(
                .noPrimaryKey, table: table.qualifiedName,
                "\(table.qualifiedName) has no primary key, so its updates and deletes cannot name their row")
        }
        return table
    }
}
