import CSQLite

/// A database file deleted, or replaced by another file renamed over its
/// path, while open: SQLite goes on using the file it opened, which no path
/// names any more. Writes to it would vanish when the connections close,
/// so they fail with ``DatabaseFileReplacedError``; reads of it stay
/// consistent, and a pool's reader never opens the file that took its place.
extension Database {
    /// The absolute path of the main database file; `nil` for an in-memory
    /// or temporary database, which has none.
    var mainFilePath: String? {
        guard let handle, let name = sqlite3_db_filename(handle, "main"), name.pointee != 0 else { return nil }
        return String(cString: name)
    }

    /// Whether the main database file is no longer at its path: deleted,
    /// renamed, or another file renamed over it. One `stat(2)` of the path
    /// (`SQLITE_FCNTL_HAS_MOVED`); `false` for an in-memory database. A
    /// read of such a file reads data that no path names any more.
    ///
    /// ```swift
    /// let (players, stale) = try await pool.read { db in (try TopPlayers().fetch(db), db.mainFileHasMoved) }
    /// ```
    public var mainFileHasMoved: Bool {
        guard let handle else { return false }
        var moved: Int32 = 0
        let code = sqlite3_file_control(handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved)
        return code == SQLITE_OK && moved != 0
    }

    /// Throws ``DatabaseFileReplacedError`` when the file this connection
    /// writes to is no longer at its path. Called by every write: before
    /// the body of `writeWithoutTransaction`, and before the `COMMIT` of
    /// `write` (so that a replacement during the transaction rolls it back).
    @inline(__always)
    func refuseWritesToMovedFile() throws {
        guard mainFileHasMoved else { return }
        throw DatabaseFileReplacedError(path: mainFilePath ?? path)
    }

    /// Runs the body of a write, reporting SQLite's own refusal to write to
    /// a moved file (``ResultCode/readOnlyDatabaseMoved``, which a rollback
    /// journal raises when it starts) as ``DatabaseFileReplacedError``, as
    /// ``refuseWritesToMovedFile()`` does in WAL mode, where SQLite checks
    /// nothing.
    @inline(__always)
    func reportingMovedFile<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError where error.code == .readOnlyDatabaseMoved {
            throw DatabaseFileReplacedError(path: mainFilePath ?? path)
        }
    }

    /// For a pool's reader just opened: throws ``DatabaseFileReplacedError``
    /// (after closing the connection) when its file is not `identity`, the
    /// file of the pool's writer: the path now names another file.
    func refuseFile(otherThan identity: ExternalChangeMonitor.FileIdentity?) throws {
        guard let identity, let filePath = mainFilePath else { return }
        // The path names `identity` (stat), and still names this
        // connection's file (HAS_MOVED, afterwards): they are the same file.
        guard ExternalChangeMonitor.FileIdentity(path: filePath) != identity || mainFileHasMoved else { return }
        close()
        throw DatabaseFileReplacedError(path: filePath)
    }
}
