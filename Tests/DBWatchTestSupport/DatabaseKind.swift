import DBWatch

/// The kinds of database a test runs against: one connection in memory or
/// on a file, or a pool (a writer and readers on a file in WAL mode).
public enum DatabaseKind: String, CaseIterable, Sendable, CustomStringConvertible {
    /// `DatabaseQueue()`: one connection to a database in memory.
    case inMemory
    /// `DatabaseQueue(path:)`: one connection to a file.
    case fileQueue
    /// `DatabasePool(path:)`: a writer and readers on a file in WAL mode.
    case pool

    /// One connection and many: an in-memory queue and a pool.
    public static let queueAndPool: [DatabaseKind] = [.inMemory, .pool]

    /// The kinds on a file, which another connection or process can open.
    public static let onFile: [DatabaseKind] = [.fileQueue, .pool]

    public var description: String { rawValue }

    /// Opens a database of this kind; one on a file opens `path` (an
    /// in-memory queue ignores it).
    public func open(at path: String, configuration: Configuration = Configuration()) throws -> any DatabaseWriter {
        switch self {
        case .inMemory: try DatabaseQueue(configuration: configuration)
        case .fileQueue: try DatabaseQueue(path: path, configuration: configuration)
        case .pool: try DatabasePool(path: path, configuration: configuration)
        }
    }

    /// Opens a database of this kind, on the file `db.sqlite` of `directory`
    /// for the kinds on a file.
    public func open(in directory: TemporaryDirectory, configuration: Configuration = Configuration()) throws
        -> any DatabaseWriter
    {
        try open(at: directory.file("db.sqlite"), configuration: configuration)
    }
}

/// Runs `body` with a new database of `kind` in a temporary directory, after
/// running `schema` (if any) in it; then closes the database and removes the
/// directory, also when `body` throws.
public func withDatabase<T>(
    _ kind: DatabaseKind, configuration: Configuration = Configuration(), schema: String? = nil,
    _ body: (any DatabaseWriter) async throws -> T
) async throws -> T {
    try await withTemporaryDirectory { directory in
        let database = try kind.open(in: directory, configuration: configuration)
        do {
            if let schema { try await database.write { db in try db.execute(sql: schema) } }
            let result = try await body(database)
            await database.close()
            return result
        } catch {
            await database.close()
            throw error
        }
    }
}

/// ``withDatabase(_:configuration:schema:_:)`` for a pool, for tests of what
/// only a pool does (several readers, batches of refetches on one reader).
public func withPool<T>(
    configuration: Configuration = Configuration(), schema: String? = nil, _ body: (DatabasePool) async throws -> T
) async throws -> T {
    try await withDatabase(.pool, configuration: configuration, schema: schema) { database in
        try await body(database as! DatabasePool)  // `.pool` opens a `DatabasePool`
    }
}
