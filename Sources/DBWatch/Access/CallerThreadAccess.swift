import CSQLite

/// Whether an access runs on a caller's thread instead of the connection's
/// own, and what that changes for the connection's commits (see
/// Database+CallerThread.swift): such an access must not wait for a lock or
/// a disk sync, so its `BEGIN` does not wait, and the WAL checkpoint that a
/// commit of it makes due is left to the connection's own thread.
///
/// Stored inline in its ``Database``; `JobQueue` sets ``isRunning`` around a
/// claimed access, and reads ``commitsNeverWait`` before lending the
/// connection.
struct CallerThreadAccess {
    /// Set while an access runs on a caller's thread.
    var isRunning = false
    /// A commit on a caller's thread left a WAL checkpoint to run.
    var checkpointIsDue = false
    /// Whether the connection's commits still wait for nothing, so that a
    /// caller's thread may run its writes: cleared for good by a statement
    /// that changes that (see ``noteSettingThatMayWait(_:_:_:)``).
    var commitsNeverWait = true

    /// Called by the authorizer for `PRAGMA` and `ATTACH`: a statement after
    /// which a `COMMIT` may wait for a lock or a disk sync, or that a claimed
    /// `BEGIN` would undo, stops claims of this connection for good. An
    /// attached file has a journal and locks of its own; `journal_mode` and
    /// `synchronous` change what a commit syncs and waits for;
    /// `wal_autocheckpoint` replaces the hook that defers checkpoints with
    /// SQLite's, which checkpoints at `COMMIT`; `busy_timeout` replaces the
    /// busy handler that lets a claimed `BEGIN` fail at once instead of
    /// waiting (Database+LockWaits.swift); `locking_mode` changes which locks a
    /// commit takes. Reading a setting (no value) changes nothing.
    mutating func noteSettingThatMayWait(
        _ action: Int32, _ first: UnsafePointer<CChar>?, _ second: UnsafePointer<CChar>?
    ) {
        guard commitsNeverWait else { return }
        if action == SQLITE_ATTACH {
            commitsNeverWait = false
            return
        }
        guard let first, second != nil else { return }
        for pragma in ["journal_mode", "synchronous", "wal_autocheckpoint", "busy_timeout", "locking_mode"]
        where sqlite3_stricmp(first, pragma) == 0 {
            commitsNeverWait = false
        }
    }
}
