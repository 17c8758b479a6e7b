import Foundation

/// Claims of the idle connection: when a one-worker queue's worker sleeps
/// with nothing queued, a caller's thread may borrow its connection for one
/// access (no job, no wake-up) while the worker waits. Only for connections
/// whose commits never wait for a lock or a disk sync (see
/// Database+CallerThread.swift): the caller's thread belongs to Swift's
/// cooperative pool and must not block. Claiming and releasing touch the
/// queue's state, so they live in JobQueue.swift
/// (``claimIdleConnection(if:)``, ``releaseClaim()``).
extension JobQueue {
    /// Runs `body` on the calling thread with the claimed `database`, then
    /// ends the claim, and queues the checkpoint that a commit left due.
    func runClaimed<T>(on database: Database, _ body: (Database) throws -> T) async throws -> T {
        database.callerThreadAccess.isRunning = true
        defer {
            database.callerThreadAccess.isRunning = false
            let checkpointIsDue = database.callerThreadAccess.checkpointIsDue
            releaseClaim()
            if checkpointIsDue { _ = push(CheckpointJob()) }
        }
        return try await runCancellably(on: database, body)
    }
}
