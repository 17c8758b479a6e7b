import PostgresNIO

extension ReplicaError {
    /// SQLSTATE classes and codes after which the replica retries: the
    /// connection failed (08), the server is shutting down or starting
    /// (57), it lacks resources (53), the slot is still held by a session
    /// that has not ended yet (55006), a serialization failure or deadlock
    /// (40001, 40P01).
    private static let retriedStates: Set<String> = ["55006", "40001", "40P01"]
    private static let retriedClasses: Set<String> = ["08", "57", "53"]

    /// The replica's view of any error from PostgreSQL or SQLite: a
    /// ``ReplicaError`` as is; a PostgreSQL error that a later attempt may
    /// not meet as ``Code/sourceUnreachable``; other server errors as fatal
    /// ``Code/sourceNotReady`` with PostgreSQL's message.
    init(classifying error: any Error) {
        if let error = error as? ReplicaError {
            self = error
            return
        }
        guard let error = error as? PSQLError else {
            self = ReplicaError(.unreadableChange, "\(error)")
            return
        }
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else {
            self = ReplicaError(.sourceUnreachable, "PostgreSQL connection: \(error.code)")
            return
        }
        let message = error.serverInfo?[.message] ?? "\(error.code)"
        if Self.retriedStates.contains(state) || Self.retriedClasses.contains(String(state.prefix(2))) {
            self = ReplicaError(.sourceUnreachable, "PostgreSQL: \(message) (SQLSTATE \(state))")
        } else if state == "42704", message.contains("replication slot") {
            self = ReplicaError(.slotMissing, "PostgreSQL: \(message)")
        } else {
            self = ReplicaError(.sourceNotReady, "PostgreSQL: \(message) (SQLSTATE \(state))")
        }
    }
}
