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

    /// Why the replica cannot follow an existing publication faithfully,
    /// or `nil` when it can: it must publish inserts, updates, deletes and
    /// truncates, and publish its tables' rows and columns whole (the copy
    /// copies them whole).
    func publicationShortcoming(_ publication: String) async throws -> String? {
        let omissions = try await text(
            """
            SELECT concat_ws(', ', CASE WHEN NOT pubinsert THEN 'inserts' END,
                CASE WHEN NOT pubupdate THEN 'updates' END, CASE WHEN NOT pubdelete THEN 'deletes' END,
                CASE WHEN NOT pubtruncate THEN 'truncates' END)
            FROM pg_publication WHERE pubname = \(publication)
            """)
        if let omissions, !omissions.isEmpty {
            return "publication \(publication) does not publish \(omissions)"
        }
        // Row filters and column lists came with PostgreSQL 15.
        let version = try await text("SELECT current_setting('server_version_num')").flatMap { Int($0) } ?? 0
        guard version >= 150_000 else { return nil }
        let filtered = try await texts(
            """
            SELECT format('%I.%I', n.nspname, c.relname) FROM pg_publication p
            JOIN pg_publication_rel r ON r.prpubid = p.oid
            JOIN pg_class c ON c.oid = r.prrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE p.pubname = \(publication) AND (r.prqual IS NOT NULL OR r.prattrs IS NOT NULL) ORDER BY 1
            """
        ).compactMap { $0 }
        guard filtered.isEmpty else {
            return """
                publication \(publication) filters the rows or columns of \(filtered.joined(separator: ", ")), \
                which the replica would copy whole
                """
        }
        return nil
    }

    /// The table `name` (as SQL names it: `player`, `sales.orders`,
    /// `"Player"`), as the catalog describes it now; `nil` when there is no
    /// such table.
    ///
    /// - Throws: ``ReplicaError`` `unsupportedType` or `noPrimaryKey`.
    func describeTable(_ name: String) async throws -> SourceTable? {
        typealias CatalogRow = (Int64, String, String, String, String, Int64, String, String, Int64, Bool, String)
        let rows: [CatalogRow] = try await guarded { [connection, logger] in
            let rows = try await connection.query(
                """
                SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, a.attname::text,
                    a.atttypid::int8, format_type(a.atttypid, NULL), t.typtype::text, t.typbasetype::int8,
                    coalesce(a.attnum = ANY(i.indkey::int2[]), false), c.relreplident::text
                FROM pg_class c
                JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                JOIN pg_type t ON t.oid = a.atttypid
                LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
                WHERE c.oid = to_regclass(\(name))
                ORDER BY a.attnum
                """,
                logger: logger)
            var decoded: [CatalogRow] = []
            for try await row in rows.decode(CatalogRow.self) { decoded.append(row) }
            return decoded
        }
        var table: SourceTable?
        var identity = "d"
        for (oid, schema, relation, kind, column, typeOID, typeName, typeKind, baseType, isKey, replicaIdentity) in rows
        {
            if table == nil {
                guard kind == "r" else {
                    throw ReplicaError(
                        .invalidConfiguration, table: "\(schema).\(relation)",
                        "\(schema).\(relation) is not an ordinary table (relkind \(kind))")
                }
                identity = replicaIdentity
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
            if isKey, case .timestamp = mapping.kind {
                // Two keys less than a millisecond apart would become one
                // row in SQLite.
                throw ReplicaError(
                    .unsupportedType, table: "\(schema).\(relation)", column: column,
                    """
                    \(schema).\(relation).\(column) is a key of type \(typeName), which SQLite stores to the \
                    millisecond: two keys closer than that would become one row
                    """)
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
        // The change feed names a row by its replica identity: the primary
        // key (DEFAULT) or the whole old row (FULL) hold the key; another
        // index, or nothing, does not.
        if let table, identity != "d", identity != "f" {
            throw ReplicaError(
                .noPrimaryKey, table: table.qualifiedName,
                """
                \(table.qualifiedName) has REPLICA IDENTITY \(identity == "i" ? "USING INDEX" : "NOTHING"), so its \
                updates and deletes do not name their row by its primary key; set REPLICA IDENTITY DEFAULT or FULL
                """)
        }
        return table
    }
}
