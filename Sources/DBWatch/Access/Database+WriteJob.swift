/// The job of every write, on the writer's connection (its worker thread,
/// or a caller's thread that claimed it): the one place where a write's
/// transaction, its change tracking for observations (``runWriteJob(_:)``)
/// and the refusal to write to a replaced file (Database+ReplacedFile.swift)
/// come together. ``DatabaseQueue`` and ``DatabasePool`` run their `write`
/// and `writeWithoutTransaction` through it.
extension Database {
    /// The job of a `write`: `body` in one `BEGIN IMMEDIATE` transaction,
    /// tracked for observations, and committed only while the file is
    /// still at its path. Shared by ``DatabaseQueue`` and ``DatabasePool``.
    func writeJob<T>(_ body: (Database) throws -> T) throws -> T {
        try runWriteJob {
            try reportingMovedFile {
                try inTransaction(.immediate) {
                    let value = try body(self)
                    try refuseWritesToMovedFile()
                    return value
                }
            }
        }
    }

    /// The job of a `writeWithoutTransaction`: `body` tracked for
    /// observations, run only while the file is still at its path, and
    /// refused if it leaves a transaction open.
    func writeJobWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try runWriteJob {
            try reportingMovedFile {
                try refuseWritesToMovedFile()
                return try refusingLeftoverTransaction { try body(self) }
            }
        }
    }
}
