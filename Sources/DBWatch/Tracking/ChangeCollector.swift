import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// Collects what write transactions change on one connection and publishes
/// each successful commit to an ``ObservationCenter``.
///
/// The pre-update hook reports every changed row (also in `WITHOUT ROWID`
/// tables and the implicit deletes of `REPLACE`); the authorizer's
/// footprint of each statement adds the columns an `UPDATE` sets and the
/// tables no hook reports (virtual tables such as FTS5, written through
/// shadow tables). A commit publishes only after the committing statement
/// has finished successfully: the commit hook can fire for a commit that
/// then fails. A rollback discards everything.
///
/// Hooks are installed only while observations exist; without any, a write
/// pays nothing per row or per commit, unless it chooses the position its
/// commit is published at (``Database/setCommitPosition(_:)``): then the
/// commit and rollback hooks alone are installed for that job, so that
/// only a commit publishes the position.
final class ChangeCollector {
    let center: ObservationCenter
    private(set) var hooksInstalled = false
    /// Only the commit and rollback hooks are installed, for a chosen
    /// position in a job that started without observations.
    private var positionHooksInstalled = false

    /// The position the open transaction's commit is published at, if
    /// the writer chose one (``Database/setCommitPosition(_:)``).
    private var chosenPosition: UInt64?

    /// Changes of the open transaction.
    private var pending = DatabaseChanges()
    /// The commit hook fired; the committing statement has not finished yet.
    private var commitRequested = false
    /// The statement being stepped, to attribute updated columns.
    private var currentStatement: Statement?
    /// `sqlite3_total_changes64` when the previous statement finished.
    private var totalChangesMark: Int64 = 0
    /// The job started without hooks; if observers appear before it ends,
    /// its changes are unknown.
    private var jobStartedUnhooked = false
    private var schemaChangedInJob = false

    /// One-entry cache from the hook's C table name to a `TableName`.
    private var cachedName: [CChar] = [0]
    private var cachedSchemaIsMain = true
    private var cachedTable = TableName("")

    init(center: ObservationCenter) {
        self.center = center
    }

    // MARK: - Jobs

    /// Called on the writer thread before each write job: installs or
    /// removes the hooks depending on whether observations exist.
    func jobWillStart(on database: Database) {
        guard let handle = database.handle else { return }
        let observed = center.writeJobWillStart()
        chosenPosition = nil
        if positionHooksInstalled {
            sqlite3_commit_hook(handle, nil, nil)
            sqlite3_rollback_hook(handle, nil, nil)
            positionHooksInstalled = false
        }
        if observed && !hooksInstalled {
            install(on: handle, database: database)
        } else if !observed && hooksInstalled {
            uninstall(from: handle)
        }
        jobStartedUnhooked = !hooksInstalled
        schemaChangedInJob = false
        totalChangesMark = sqlite3_total_changes64(handle)
    }

    /// Called after each write job. Covers the window in which the first
    /// observation registered while an unhooked job was running.
    func jobDidFinish(on database: Database) {
        // A position chosen for a commit that did not happen is dropped.
        chosenPosition = nil
        guard jobStartedUnhooked, let handle = database.handle, center.hasObservations else { return }
        jobStartedUnhooked = false
        if sqlite3_total_changes64(handle) != totalChangesMark || schemaChangedInJob {
            var changes = DatabaseChanges()
            changes.affectsEverything = true
            center.didCommit(changes)
        }
    }

    private func install(on handle: OpaquePointer, database: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_preupdate_hook(handle, preUpdateHook, context)
        sqlite3_commit_hook(handle, commitHook, context)
        sqlite3_rollback_hook(handle, rollbackHook, context)
        hooksInstalled = true
        pending = DatabaseChanges()
        commitRequested = false
    }

    func uninstall(from handle: OpaquePointer) {
        guard hooksInstalled else { return }
        sqlite3_preupdate_hook(handle, nil, nil)
        sqlite3_commit_hook(handle, nil, nil)
        sqlite3_rollback_hook(handle, nil, nil)
        hooksInstalled = false
        pending = DatabaseChanges()
        endCommit()
        currentStatement = nil
    }

    /// The writer chose the position the open transaction's commit is
    /// published at (at least `position`; see ``ObservationCenter/didCommit(_:at:)``).
    /// Without observations, installs the commit and rollback hooks for
    /// this job, so that a rollback drops the position.
    func chooseCommitPosition(_ position: UInt64, on handle: OpaquePointer) {
        chosenPosition = max(chosenPosition ?? 0, position)
        guard !hooksInstalled, !positionHooksInstalled else { return }
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_commit_hook(handle, commitHook, context)
        sqlite3_rollback_hook(handle, rollbackHook, context)
        positionHooksInstalled = true
    }

    // MARK: - Statements

    @inline(__always)
    func statementWillStep(_ statement: Statement) {
        if hooksInstalled { currentStatement = statement }
    }

    /// SQLite is re-preparing the statement being stepped: the rows it
    /// changes during this step count for all their columns (see
    /// `rowWillChange`), since its footprint is the old program's until the
    /// step returns.
    func statementIsBeingReprepared() {
        currentStatement = nil
    }

    /// The statement finished (done, failed, or reset early).
    func statementDidFinish(_ statement: Statement, succeeded: Bool, in database: Database) {
        if statement.footprint.changesSchema { schemaChangedInJob = true }
        currentStatement = nil
        guard let handle = database.handle else { return }
        if positionHooksInstalled {
            // No observation at the start of the job: only a chosen
            // position is published (a new observation gets the job's
            // changes from `jobDidFinish`).
            if commitRequested {
                if succeeded && sqlite3_get_autocommit(handle) != 0, let position = chosenPosition.take() {
                    center.didCommit(DatabaseChanges(), at: position)
                }
                endCommit()
            }
            return
        }
        guard hooksInstalled else { return }
        if statement.footprint.changesSchema && succeeded {
            pending.affectsEverything = true
        }
        let total = sqlite3_total_changes64(handle)
        if succeeded && total != totalChangesMark {
            // Tables the statement writes but no hook reported: virtual
            // tables (their shadow tables are what the hooks see).
            for (table, columns) in statement.footprint.writes where pending.change(of: table) == nil {
                pending.insert(table, columns: columns, rowID: nil)
            }
        }
        totalChangesMark = total
        if commitRequested {
            if succeeded && sqlite3_get_autocommit(handle) != 0 {
                let changes = pending
                pending = DatabaseChanges()
                let position = chosenPosition.take()
                if !changes.isEmpty || position != nil { center.didCommit(changes, at: position) }
            }
            endCommit()
            // Otherwise the commit failed: either SQLite rolled back (the
            // rollback hook cleared `pending`) or the transaction is still
            // open (a busy COMMIT) and its changes stay pending.
        } else if statement.footprint.changesSchema && succeeded && sqlite3_get_autocommit(handle) != 0 {
            // `ATTACH` and `DETACH` change what names mean, outside any
            // transaction: no commit follows to publish them.
            let changes = pending
            pending = DatabaseChanges()
            center.didCommit(changes)
        }
    }

    // MARK: - Hooks

    @inline(__always)
    fileprivate func rowWillChange(
        operation: Int32, schema: UnsafePointer<CChar>, table: UnsafePointer<CChar>, oldRowID: Int64, newRowID: Int64
    ) {
        let tableName = resolve(schema: schema, table: table)
        // For WITHOUT ROWID tables the keys mean nothing; no region ever
        // holds rowids for such a table, so they are never compared.
        switch operation {
        case SQLITE_UPDATE:
            let columns = currentStatement?.footprint.writes[tableName] ?? .all
            pending.insert(tableName, columns: columns, rowID: oldRowID)
            if newRowID != oldRowID { pending.insert(tableName, columns: columns, rowID: newRowID) }
        case SQLITE_INSERT:
            pending.insert(tableName, columns: .all, rowID: newRowID)
        default:
            pending.insert(tableName, columns: .all, rowID: oldRowID)
        }
    }

    @inline(__always)
    private func resolve(schema: UnsafePointer<CChar>, table: UnsafePointer<CChar>) -> TableName {
        let schemaIsMain = strcmp(schema, "main") == 0
        // Compare the text, not the pointer: after a schema change SQLite
        // may reuse the memory of a dropped table's name.
        if schemaIsMain == cachedSchemaIsMain,
            cachedName.withUnsafeBufferPointer({ strcmp($0.baseAddress!, table) == 0 })
        {
            if schemaIsMain { return cachedTable }
            return TableName(String(cString: table), schema: String(cString: schema))
        }
        let name = TableName(String(cString: table), schema: String(cString: schema))
        cachedName = Array(UnsafeBufferPointer(start: table, count: strlen(table) + 1))
        cachedSchemaIsMain = schemaIsMain
        cachedTable = name
        return name
    }

    /// The commit hook: the commit becomes visible to readers before it is
    /// published, so it enters the center's ``CommitGate`` until then.
    fileprivate func transactionWillCommit() {
        if !commitRequested { center.commitGate.enter() }
        commitRequested = true
    }

    fileprivate func transactionDidRollback() {
        pending = DatabaseChanges()
        chosenPosition = nil
        endCommit()
    }

    /// The commit was published or failed: it leaves the gate.
    private func endCommit() {
        guard commitRequested else { return }
        commitRequested = false
        center.commitGate.leave()
    }
}

private func preUpdateHook(
    _ context: UnsafeMutableRawPointer?, _ db: OpaquePointer?, _ operation: Int32,
    _ schema: UnsafePointer<CChar>?, _ table: UnsafePointer<CChar>?, _ oldKey: sqlite3_int64, _ newKey: sqlite3_int64
) {
    guard let context, let schema, let table else { return }
    Unmanaged<ChangeCollector>.fromOpaque(context).takeUnretainedValue()
        .rowWillChange(operation: operation, schema: schema, table: table, oldRowID: oldKey, newRowID: newKey)
}

private func commitHook(_ context: UnsafeMutableRawPointer?) -> Int32 {
    guard let context else { return 0 }
    Unmanaged<ChangeCollector>.fromOpaque(context).takeUnretainedValue().transactionWillCommit()
    return 0
}

private func rollbackHook(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<ChangeCollector>.fromOpaque(context).takeUnretainedValue().transactionDidRollback()
}
