import Foundation

/// Checks on a database path before SQLite opens it, for clearer errors.
///
/// ```swift
/// try DatabaseFile.checkExists("app.sqlite")   // throws CommandFailure(.unavailable, …) when missing
/// ```
enum DatabaseFile {
    /// Throws a ``CommandFailure`` with status ``ExitStatus/unavailable``
    /// when `path` does not exist or is a directory. Creates nothing.
    static func checkExists(_ path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CommandFailure(
                .unavailable, "no such database file: \(CellText.sanitized(path)) (nothing was created)")
        }
        try checkNotDirectory(path)
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw CommandFailure(.unavailable, "cannot read \(CellText.sanitized(path)): permission denied")
        }
    }
}

extension DatabaseFile {
    /// Throws a ``CommandFailure`` with status ``ExitStatus/unavailable``
    /// when `path` is a directory; for the commands that create a missing
    /// file, where SQLite would only say "unable to open database file".
    static func checkNotDirectory(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CommandFailure(.unavailable, "\(CellText.sanitized(path)) is a directory, not a database file")
        }
    }

    /// Whether the file's header says WAL mode (bytes 18 and 19, the file
    /// format versions, are 2). Reads 100 bytes; `false` when it cannot.
    /// Opens without blocking: a FIFO would wait for a writer forever
    /// (SQLite then reports it as unreadable).
    static func isInWALMode(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK)
        guard descriptor >= 0 else { return false }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        guard let header = try? handle.read(upToCount: 100), header.count == 100 else { return false }
        let bytes = [UInt8](header)
        return bytes.starts(with: Array("SQLite format 3\0".utf8)) && bytes[18] == 2 && bytes[19] == 2
    }
}
