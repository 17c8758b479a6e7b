import DBWatch
import Dispatch

/// Runs `body` while another connection holds `path` (a database in
/// rollback-journal mode holding the table `existing`) locked with
/// `begin`, in a transaction that rolls back afterwards.
func withDatabaseLocked<T: Sendable>(
    _ path: String, by begin: String, _ body: () async throws -> T
) async throws -> T {
    let holder = try DatabaseQueue(path: path)
    defer { holder.syncClose() }
    try await holder.write { db in try db.execute(sql: "CREATE TABLE existing (a)") }
    let (locked, lockedContinuation) = AsyncStream.makeStream(of: Void.self)
    let release = DispatchSemaphore(value: 0)
    let holding = Task {
        try await holder.writeWithoutTransaction { db in
            try db.execute(sql: begin)
            lockedContinuation.yield()
            _ = release.wait(timeout: .now() + 120)
            try db.execute(sql: "ROLLBACK")
        }
    }
    defer { release.signal() }
    for await _ in locked { break }
    let result = try await body()
    release.signal()
    try await holding.value
    return result
}
