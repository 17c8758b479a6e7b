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
        if let authorizationPolicy,
            !authorizationPolicy.allows(action, first.map { String(cString: $0) }, second.map { String(cString: $0) })
        {
            return SQLITE_DENY
        }
        if action == SQLITE_DROP_TABLE || action == SQLITE_DROP_TEMP_TABLE || action == SQLITE_DROP_VTABLE {
            // `DROP TABLE t` asks for SQLITE_DELETE on `t` next: answering
            // SQLITE_IGNORE there would silently skip the drop.
            authorizerIsDroppingTable = true
        }
        guard footprintUnderConstruction != nil else {
            // SQLite is preparing on its own: a re-prepare after a schema
            // change, or a virtual table module's internal statement.
            if action == SQLITE_SELECT || action == SQLITE_READ { authorizerRanOutsidePrepare = true }
            return action == SQLITE_DELETE ? deleteAnswer(first) : SQLITE_OK
        }
        switch action {
        case SQLITE_READ:
            guard let first else { return SQLITE_OK }
            let table = TableName(String(cString: first), schema: schema.map { String(cString: $0) } ?? "main")
            let column = second.map { String(cString: $0) } ?? ""
            // An empty column name: the statement reads the table, not a column (`count(*)`).
            footprintUnderConstruction!.reads.insert(
                table, columns: column.isEmpty ? .all : .columns([column.lowercased()]))
        case SQLITE_INSERT, SQLITE_DELETE:
            guard let first else { return SQLITE_OK }
            let name = String(cString: first)
            footprintUnderConstruction!.recordWrite(
                TableName(name, schema: schema.map { String(cString: $0) } ?? "main"), columns: .all)
            if action == SQLITE_DELETE { return deleteAnswer(first) }
        case SQLITE_UPDATE:
            guard let first else { return SQLITE_OK }
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
        case SQLITE_TRANSACTION, SQLITE_SAVEPOINT:
            footprintUnderConstruction!.controlsTransaction = true
        default:
            break
        }
        return SQLITE_OK
    }

    /// `SQLITE_IGNORE` on a delete disables the truncate optimization (whose
    /// rows would reach no hook) while the rows are still deleted. SQLite's
    /// own tables are left alone.
    private func deleteAnswer(_ table: UnsafePointer<CChar>?) -> Int32 {
        guard let table, !authorizerIsDroppingTable else { return SQLITE_OK }
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
