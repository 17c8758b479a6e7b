import CSQLite

/// What the authorizer (`sqlite3_set_authorizer`) of one connection learns
/// while SQLite prepares a statement: the statement's footprint, and what
/// the next call or the error message needs.
///
/// Stored inline in its ``Database``, whose `authorize` (Database+Authorizer.swift)
/// receives SQLite's callback and hands each action here. The authorizer
/// runs during our own prepare, and also inside a step, when SQLite
/// re-prepares a statement by itself after a schema change.
struct StatementAuthorizer {
    /// The footprint being collected, during our own prepare or during one
    /// that SQLite runs by itself inside a step; nil otherwise.
    var footprintUnderConstruction: StatementFootprint?
    /// The authorizer ran outside our prepare, inside a step: SQLite
    /// re-prepared the stepped statement after a schema change (or a virtual
    /// table module prepared a statement of its own). What it reported is
    /// in `footprintUnderConstruction`; `Database.statementWasReprepared`
    /// sorts it out after the step.
    var ranOutsidePrepare = false
    /// The table, view or virtual table whose drop the authorizer allowed on
    /// its previous call: SQLite asks `SQLITE_DELETE` on it next, for the
    /// drop itself (see `deleteAnswer`).
    var authorizedDrop: String?
    /// Why the authorizer last refused an action (under an untrusted-SQL
    /// policy), for the error message.
    var lastRefusal: String?

    /// Starts collecting the footprint of a statement we prepare.
    mutating func willPrepare() {
        footprintUnderConstruction = StatementFootprint()
        authorizedDrop = nil
        lastRefusal = nil
    }

    /// Ends our prepare: the footprint collected meanwhile.
    mutating func didPrepare() -> StatementFootprint {
        footprintUnderConstruction.take()!
    }

    /// Starts collecting when SQLite prepares by itself, inside a step.
    mutating func willCollectOutsidePrepare() {
        footprintUnderConstruction = StatementFootprint()
        ranOutsidePrepare = true
    }

    /// After a step during which the authorizer ran: what it collected.
    mutating func takeFootprintCollectedOutsidePrepare() -> StatementFootprint? {
        ranOutsidePrepare = false
        return footprintUnderConstruction.take()
    }

    /// Records one action in the footprint being collected. Returns the
    /// authorizer's answer: `SQLITE_OK`, or `SQLITE_IGNORE` for a delete
    /// (see `deleteAnswer`).
    ///
    /// - Parameter droppedObject: the object whose drop the previous call allowed.
    @inline(__always)
    mutating func record(
        _ action: Int32, _ first: UnsafePointer<CChar>?, _ second: UnsafePointer<CChar>?,
        _ schema: UnsafePointer<CChar>?, droppedObject: String?
    ) -> Int32 {
        switch action {
        case SQLITE_DROP_TABLE, SQLITE_DROP_TEMP_TABLE, SQLITE_DROP_VIEW, SQLITE_DROP_TEMP_VIEW, SQLITE_DROP_VTABLE:
            authorizedDrop = first.map { String(cString: $0) }
        default:
            break
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
            if action == SQLITE_DELETE { return Self.deleteAnswer(first, droppedObject: droppedObject) }
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
    private mutating func recordRowsRead(table name: String, schema: String?) {
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
    private static func deleteAnswer(_ table: UnsafePointer<CChar>?, droppedObject: String?) -> Int32 {
        guard let table else { return SQLITE_OK }
        if let droppedObject, sqlite3_stricmp(table, droppedObject) == 0 { return SQLITE_OK }
        return sqlite3_strnicmp(table, "sqlite_", 7) == 0 ? SQLITE_OK : SQLITE_IGNORE
    }
}
