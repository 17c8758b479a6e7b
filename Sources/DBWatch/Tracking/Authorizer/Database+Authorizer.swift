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
        let droppedObject = authorizer.authorizedDrop.take()
        if untrustedSQL.isActive, let refusal = authorizeUntrusted(action, first, second) { return refusal }
        if action == SQLITE_PRAGMA || action == SQLITE_ATTACH {
            callerThreadAccess.noteSettingThatMayWait(action, first, second)
        }
        if authorizer.footprintUnderConstruction == nil {
            // SQLite is preparing on its own, inside a step: a re-prepare
            // after a schema change, or a virtual table module's internal
            // statement. Collected like a prepare of ours; the step decides
            // what it was (see `statementWasReprepared`). Meanwhile the
            // change hooks cannot trust the old footprint's columns.
            authorizer.willCollectOutsidePrepare()
            changeCollector?.statementIsBeingReprepared()
        }
        return authorizer.record(action, first, second, schema, droppedObject: droppedObject)
    }

    /// The authorizer ran during the step of `statement`. When SQLite
    /// re-prepared `statement` (after a schema change), what the authorizer
    /// reported meanwhile becomes its footprint, and the region being
    /// recorded takes what the new program reads: the region recorded
    /// before the step was the old program's. Otherwise (a virtual table's
    /// own statement) the report is dropped. Other cached statements need
    /// nothing: SQLite re-prepares each one at its own next step.
    ///
    /// Runs only after the authorizer ran outside a prepare of ours, so
    /// a step costs one flag test as before.
    func statementWasReprepared(_ statement: Statement) {
        guard var footprint = authorizer.takeFootprintCollectedOutsidePrepare(), statement.wasReprepared else {
            return
        }
        resolveUnqualifiedReads(in: &footprint)
        widenGeneratedColumnReads(in: &footprint)
        statement.didReprepare(footprint: footprint)
        recordReads(statement.executionRegion())
    }

    /// Resolves the tables read without a schema as SQLite does: `temp`
    /// first, then `main`.
    func resolveUnqualifiedReads(in footprint: inout StatementFootprint) {
        guard let handle, !footprint.unqualifiedRowsReads.isEmpty else { return }
        for name in footprint.unqualifiedRowsReads {
            let table: TableName
            if name.lowercased().hasPrefix("sqlite_") {
                // `temp` "has" sqlite_schema too: keep the aliases apart from the lookup.
                table = StatementAuthorizer.canonicalTable(name, schema: nil)
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
        let outerFootprint = authorizer.footprintUnderConstruction
        authorizer.footprintUnderConstruction = StatementFootprint()
        defer { authorizer.footprintUnderConstruction = outerFootprint }
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
}

private func databaseAuthorizer(
    _ context: UnsafeMutableRawPointer?, _ action: Int32, _ first: UnsafePointer<CChar>?,
    _ second: UnsafePointer<CChar>?, _ schema: UnsafePointer<CChar>?, _ trigger: UnsafePointer<CChar>?
) -> Int32 {
    guard let context else { return SQLITE_OK }
    return Unmanaged<Database>.fromOpaque(context).takeUnretainedValue().authorize(action, first, second, schema)
}
