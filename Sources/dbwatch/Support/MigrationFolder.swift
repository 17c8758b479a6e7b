import DBWatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Loads the migrations of `--dir` with plain errors: the path and the
/// operating system's reason ("Permission denied") for a folder or file
/// that cannot be read (exit 66), and a file that is not UTF-8 reported
/// as a bad migration (exit 65), like a bad name or a gap.
///
/// ```swift
/// let migrator = try MigrationFolder.migrator(at: "Migrations")
/// ```
enum MigrationFolder {
    /// The migrator of `directory`.
    ///
    /// - Throws: ``CommandFailure`` for an unreadable folder or file, or a
    ///   file that is not UTF-8; the other ``MigrationError``s as they are.
    static func migrator(at directory: String) throws -> Migrator {
        do {
            return try Migrator(directory: directory)
        } catch MigrationError.unreadable(let path, let reason) {
            throw failure(path: path, directory: directory) ?? MigrationError.unreadable(path: path, reason: reason)
        }
    }

    /// Why `path` (the folder, or a file in it) cannot be loaded, found
    /// again here: the library's reason for it is not always plain words.
    static func failure(path: String, directory: String) -> CommandFailure? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let shown = CellText.sanitized(path)
        let isFolder = path == directory
        let what = isFolder ? "the migrations folder" : "the migration file"
        if isFolder, opendir(path).map({ closedir($0) }) == nil {
            return CommandFailure(.unavailable, "cannot read \(what) \(shown): \(String(cString: strerror(errno)))")
        }
        if !isFolder {
            let descriptor = open(path, O_RDONLY)
            var byte: UInt8 = 0
            if descriptor < 0 || read(descriptor, &byte, 1) < 0 {
                let reason = String(cString: strerror(errno))
                if descriptor >= 0 { close(descriptor) }
                return CommandFailure(.unavailable, "cannot read \(what) \(shown): \(reason)")
            }
            close(descriptor)
            if let data = FileManager.default.contents(atPath: path), String(validating: data, as: UTF8.self) == nil {
                return CommandFailure(.badSQL, "\(what) \(shown) is not valid UTF-8 text")
            }
        }
        return nil
    }
}
