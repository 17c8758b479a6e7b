import CSQLite

/// What changes while an access runs on the caller's thread, on a
/// connection claimed from its idle worker (see
/// ``JobQueue/perform(claimingIdleConnection:_:)``): it must not block that
/// thread, which belongs to Swift's cooperative pool. So `BEGIN` does not
/// wait for another connection's lock (the access goes to the connection's
/// own thread instead, which waits), and a WAL checkpoint, which syncs the
/// files to disk, is left to the connection's own thread.
extension Database {
    /// Thrown by `BEGIN` on a caller's thread when another connection holds
    /// the lock: nothing ran, and the access is queued for the connection's
    /// thread instead.
    struct LockWaitRefused: Error {}

    /// The number of WAL pages after which a commit checkpoints (SQLite's
    /// default `wal_autocheckpoint`).
    static let autoCheckpointPages: Int32 = 1000

    /// Opens the transaction `kind`. On a caller's thread, fails at once with
    /// ``LockWaitRefused`` instead of waiting for a lock.
    @inline(__always)
    func begin(_ kind: TransactionKind) throws {
        guard callerThreadAccess.isRunning else { return try execute(sql: Database.beginStatement(kind)) }
        try beginWithoutWaiting(kind)
    }

    private func beginWithoutWaiting(_ kind: TransactionKind) throws {
        lockWaits.isAllowed = false
        defer { lockWaits.isAllowed = true }
        do {
            try execute(sql: Database.beginStatement(kind))
        } catch ResultCode.busy {
            throw LockWaitRefused()
        }
    }

    /// Replaces SQLite's automatic checkpoint (same threshold) by one that
    /// runs on the connection's own thread only: a commit made on a caller's
    /// thread marks the checkpoint as due, and ``checkpointIfDue()`` runs it
    /// later as a job.
    func installCheckpointHook() throws {
        let handle = try openHandle()
        sqlite3_wal_hook(handle, walHook, Unmanaged.passUnretained(self).toOpaque())
        // The pool's own `journal_mode = WAL` and `synchronous = NORMAL` are what claims rely on.
        callerThreadAccess.commitsNeverWait = true
    }

    /// A passive checkpoint (it never waits for readers), if a commit on a
    /// caller's thread left one due. Its failure is not an error of any
    /// access, as with SQLite's automatic checkpoint.
    func checkpointIfDue() {
        guard callerThreadAccess.checkpointIsDue, let handle else { return }
        callerThreadAccess.checkpointIsDue = false
        checkpoint(handle)
    }

    fileprivate func walDidGrow(to pages: Int32) {
        guard pages >= Database.autoCheckpointPages, let handle else { return }
        if callerThreadAccess.isRunning {
            callerThreadAccess.checkpointIsDue = true
        } else {
            checkpoint(handle)
        }
    }

    private func checkpoint(_ handle: OpaquePointer) {
        let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        if code != SQLITE_OK {
            logger.debug("checkpoint failed", metadata: ["error": "\(SQLiteError(connection: handle, code: code))"])
        }
    }
}

/// A job that runs the checkpoint a commit on a caller's thread left due.
final class CheckpointJob: ConnectionJob {
    func run(on database: Database) {
        database.checkpointIfDue()
    }

    func fail(with error: any Error) {}
}

private func walHook(
    _ context: UnsafeMutableRawPointer?, _ db: OpaquePointer?, _ schema: UnsafePointer<CChar>?, _ pages: Int32
) -> Int32 {
    guard let context else { return SQLITE_OK }
    Unmanaged<Database>.fromOpaque(context).takeUnretainedValue().walDidGrow(to: pages)
    return SQLITE_OK
}
