import CSQLite

extension Database {
    /// Installs the authorizer that records each statement's footprint and
    /// disables the truncate optimization so deletes reach the pre-update hook.
    func installAuthorizer() {
        guard let handle else { return }
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_set_authorizer(handle, databaseAuthorizer, context)
    }

    /// One authorizer call. Returns `SQLITE_OK`, `SQLITE_IGNORE` or `SQLITE_DENY`.
    @inline(__always)
    func authorize(
        _ action: Int32, _ first: UnsafePointer<CChar>?, _ second: UnsafePointer<CChar>?,
        _ schema: UnsafePointer<CChar>?
    ) -> Int32 {
        // Only the call right after a drop may be the drop's own delete.
        let droppedObject = authorizedDrop
        authorizedDrop = nil
        if untrustedPolicy != nil,
            let refusal = UntrustedSQLPolicy.refusal(
                action: action, first: first.map { String(cString: $0) }, second: second.map { String(cString: $0) })
        {
            lastRefusal = refusal
            return SQLITE_DENY
        }
        if untrustedPolicy != nil, action == SQLITE_PRAGMA, second == nil, let first,
            UntrustedSQLPolicy.readsNotMarkedReadOnly.contains(String(cString: first).lowercased())
        {
            footprintUnderConstruction?.readsPragmaNotMarkedReadOnly = true
        }
        if action == SQLITE_PRAGMA || action == SQLITE_ATTACH { noteSettingThatMayWait(action, first, second) }
        switch action {
        case SQLITE_DROP_TABLE, SQLITE_DROP_TEMP_TABLE, SQLITE_DROP_VIEW, SQLITE_DROP_TEMP_VIEW, SQLITE_DROP_VTABLE:
            authorizedDrop = first.map { String(cString: $0) }
        default:
            break
        }
        if footprintUnderConstruction == nil {
            // SQLite is preparing on its own, inside a step: a re-prepare
            // after a schema change, or a virtual table module's internal
            // statement. Collected like a prepare of ours; the step decides
            // what it was (see `statementWasReprepared`). Meanwhile the
            // change hooks cannot trust the old footprint's columns.
            footprintUnderConstruction = StatementFootprint()
            authorizerRanOutsidePrepare = true
            changeCollector?.statementIsBeingReprepared()
        }
        switch action {
        case SQLITE_READ:
            guard let first else { return SQLITE_OK }
            let name = String(cString: first)
            let column = second.map { String(cString: $0) } ?? ""
            if column.isEmpty {
                // The statement depends on which rows exist, not on a column
                // (`count(*)`, `SELECT 1 FROM t`, joins on the rowid): only
                // inserts and deletes can change it. SQLite gives no schema
                // for `main` and `temp` tables here.
                recordRowsRead(table: name, schema: schema.map { String(cString: $0) })
            } else {
                let table = TableName(name, schema: schema.map { String(cString: $0) } ?? "main")
                footprintUnderConstruction!.reads.insert(table, columns: .columns([column.lowercased()]))
            }
        case SQLITE_INSERT, SQLITE_DELETE:
            guard let first else { return SQLITE_OK }
            let name = String(cString: first)
            footprintUnderConstruction!.recordWrite(
                TableName(name, schema: schema.map { String(cString: $0) } ?? "main"), columns: .all)
            if action == SQLITE_DELETE { return deleteAnswer(first, droppedObject: droppedObject) }
        case SQLITE_UPDATE:
            // A statement's first use of a virtual table on a connection asks
            // to update the schema table, and writes nothing.
            guard let first, sqlite3_stricmp(first, "sqlite_master") != 0,
                sqlite3_stricmp(first, "sqlite_temp_master") != 0
            else { return SQLITE_OK }
            let column = second.map { String(cString: $0).lowercased() }
            footprintUnderConstruction!.recordWrite(
                TableName(String(cString: first), schema: schema.map { String(cString: $0) } ?? "main"),
                columns: column.map { .columns([$0]) } ?? .all)
        case SQLITE_CREATE_INDEX, SQLITE_CREATE_TABLE, SQLITE_CREATE_TEMP_INDEX, SQLITE_CREATE_TEMP_TABLE,
            SQLITE_CREATE_TEMP_TRIGGER, SQLITE_CREATE_TEMP_VIEW, SQLITE_CREATE_TRIGGER, SQLITE_CREATE_VIEW,
            SQLITE_DROP_INDEX, SQLITE_DROP_TABLE, SQLITE_DROP_TEMP_INDEX, SQLITE_DROP_TEMP_TABLE,
            SQLITE_DROP_TEMP_TRIGGER, SQLITE_DROP_TEMP_VIEW, SQLITE_DROP_TRIGGER, SQLITE_DROP_VIEW,
            SQLITE_ALTER_TABLE, SQLITE_CREATE_VTABLE, SQLITE_DROP_VTABLE, SQLITE_ATTACH, SQLITE_DETACH:
            footprintUnderConstruction!.changesSchema = true
        case SQLITE_TRANSACTION:
            footprintUnderConstruction!.beginsOrEndsTransaction = true
        default:
            break
        }
        return SQLITE_OK
    }

    /// Records a dependency on the rows of `table` (see `ColumnSet.rows`).
    /// Without a schema, the name is resolved after the prepare.
    private func recordRowsRead(table name: String, schema: String?) {
        if let schema {
            footprintUnderConstruction!.reads.insert(Self.canonicalTable(name, schema: schema), columns: .rows)
        } else {
            footprintUnderConstruction!.unqualifiedRowsReads.append(name)
        }
    }

    /// The schema table under the name SQLite gives it when a column of it
    /// is read (`main.sqlite_master`, `temp.sqlite_temp_master`), whatever
    /// alias the SQL used (`sqlite_schema`, `temp.sqlite_master`, …).
    static func canonicalTable(_ name: String, schema: String?) -> TableName {
        switch name.lowercased() {
        case "sqlite_master", "sqlite_schema":
            return schema?.lowercased() == "temp"
                ? TableName("sqlite_temp_master", schema: "temp") : TableName("sqlite_master", schema: schema ?? "main")
        case "sqlite_temp_master", "sqlite_temp_schema":
            return TableName("sqlite_temp_master", schema: "temp")
        default:
            return TableName(name, schema: schema ?? "main")
        }
    }

    /// Resolves the tables read without a schema as SQLite does: `temp`
    /// first, then `main`.
    func resolveUnqualifiedReads(in footprint: inout StatementFootprint) {
        guard let handle, !footprint.unqualifiedRowsReads.isEmpty else { return }
        for name in footprint.unqualifiedRowsReads {
            let table: TableName
            if name.lowercased().hasPrefix("sqlite_") {
                // `temp` "has" sqlite_schema too: keep the aliases apart from the lookup.
                table = Self.canonicalTable(name, schema: nil)
            } else {
                let isTemp =
                    sqlite3_table_column_metadata(handle, "temp", name, nil, nil, nil, nil, nil, nil) == SQLITE_OK
                table = TableName(name, schema: isTemp ? "temp" : "main")
            }
            footprint.reads.insert(table, columns: .rows)
        }
        footprint.unqualifiedRowsReads = []
    }

    /// A generated column changes with the columns it is computed from, and
    /// the authorizer reports only the generated column as read: a region
    /// that reads one covers every column of its table.
    func widenGeneratedColumnReads(in footprint: inout StatementFootprint) {
        for (table, region) in footprint.reads.entries {
            guard case .columns(let columns) = region.columns, !columns.isEmpty else { continue }
            if !generatedColumns(of: table).isDisjoint(with: columns) {
                footprint.reads.insert(table, columns: .all)
            }
        }
    }

    /// The generated columns of `table` (lowercased), from
    /// `pragma_table_xinfo`. Asked on every prepare that reads columns (the
    /// statement cache makes that rare), never cached: another connection
    /// may have added a generated column since.
    private func generatedColumns(of table: TableName) -> Set<String> {
        guard let handle else { return [] }
        // Raw C calls, with a throwaway footprint: this query's own
        // authorizer calls must not count as SQLite re-preparing on its own.
        let outerFootprint = footprintUnderConstruction
        footprintUnderConstruction = StatementFootprint()
        defer { footprintUnderConstruction = outerFootprint }
        var statement: OpaquePointer?
        let sql = "SELECT name FROM pragma_table_xinfo(?1, ?2) WHERE hidden IN (2, 3)"
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            return []
        }
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_text(statement, 1, table.name, -1, dbwatch_transient())
        sqlite3_bind_text(statement, 2, table.schema, -1, dbwatch_transient())
        var names: Set<String> = []
        while sqlite3_step(statement) == SQLITE_ROW {
            if let name = sqlite3_column_text(statement, 0) { names.insert(String(cString: name).lowercased()) }
        }
        return names
    }

    /// The answer to `SQLITE_DELETE` on `table`. This is the authorizer's
    /// only `SQLITE_IGNORE`, and SQLite asks for a delete in two places
    /// where it means different things:
    ///
    /// - A `DELETE` statement (also in a trigger body, a foreign-key action,
    ///   or the `DELETE FROM sqlite_master …` SQLite runs for a schema
    ///   change): `SQLITE_IGNORE` disables the truncate optimization (whose
    ///   rows would reach no hook) and the rows are still deleted.
    /// - A drop: every `DROP` asks on the schema table, and `DROP TABLE`
    ///   and `DROP VIEW` (temporary and virtual tables included) ask again
    ///   on the dropped object, right after the drop's own action
    ///   (`droppedObject`). `SQLITE_IGNORE` there skips the drop without an
    ///   error.
    ///
    /// So the dropped object and SQLite's own tables (the schema tables
    /// every drop asks about; `sqlite_sequence` and the `sqlite_stat`
    /// tables, whose changes reach no hook anyway) get `SQLITE_OK`, every
    /// other table `SQLITE_IGNORE`.
    private func deleteAnswer(_ table: UnsafePointer<CChar>?, droppedObject: String?) -> Int32 {
        guard let table else { return SQLITE_OK }
        if let droppedObject, sqlite3_stricmp(table, droppedObject) == 0 { return SQLITE_OK }
        return sqlite3_strnicmp(table, "sqlite_", 7) == 0 ? SQLITE_OK : SQLITE_IGNORE
    }
}

private func databaseAuthorizer(
    _ context: UnsafeMutableRawPointer?, _ action: Int32, _ first: UnsafePointer<CChar>?,
    _ second: UnsafePointer<CChar>?, _ schema: UnsafePointer<CChar>?, _ trigger: UnsafePointer<CChar>?
) -> Int32 {
    guard let context else { return SQLITE_OK }
    return Unmanaged<Database>.fromOpaque(context).takeUnretainedValue().authorize(action, first, second, schema)
}
