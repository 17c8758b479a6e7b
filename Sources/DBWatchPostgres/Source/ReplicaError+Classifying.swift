import DBWatch
import PostgresNIO

extension ReplicaError {
    /// SQLSTATE classes and codes after which the replica retries: the
    /// connection failed (08), the server is shutting down or starting
    /// (57), it lacks resources (53), the slot is still held by a session
    /// that has not ended yet (55006), a serialization failure or deadlock
    /// (40001, 40P01).
    private static let retriedStates: Set<String> = ["55006", "40001", "40P01"]
    private static let retriedClasses: Set<String> = ["08", "57", "53"]

    /// Client-side failures that another attempt would meet again: the
    /// server asks for a password the configuration lacks, or for an
    /// authentication or TLS the client cannot do.
    private static let refusedConnections: [PSQLError.Code] = [
        .authMechanismRequiresPassword, .unsupportedAuthMechanism, .saslError, .sslUnsupported,
        .failedToAddSSLHandler,
    ]

    /// The replica's view of any error from PostgreSQL or SQLite: a
    /// ``ReplicaError`` as is; a PostgreSQL error that a later attempt may
    /// not meet as ``Code/sourceUnreachable``; a refused authentication and
    /// other server errors as fatal ``Code/sourceNotReady`` with
    /// PostgreSQL's message; an error of the SQLite database as fatal
    /// ``Code/databaseFailed``.
    init(classifying error: any Error) {
        if let error = error as? ReplicaError {
            self = error
            return
        }
        if let error = error as? SQLiteError {
            self = ReplicaError(.databaseFailed, "the replica's SQLite database: \(error)")
            return
        }
        if let error = error as? PostgresServerError {
            self.init(sqlState: error.sqlState, message: error.message, detail: error.detail)
            return
        }
        guard let error = error as? PSQLError else {
            self = ReplicaError(.unreadableChange, "\(error)")
            return
        }
        if Self.refusedConnections.contains(error.code) {
            self = ReplicaError(.sourceNotReady, "PostgreSQL refused the connection: \(error.code)")
            return
        }
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else {
            self = ReplicaError(.sourceUnreachable, "PostgreSQL connection: \(error.code)")
            return
        }
        self.init(
            sqlState: state, message: error.serverInfo?[.message] ?? "\(error.code)", detail: error.serverInfo?[.detail]
        )
    }

    /// An error PostgreSQL reported with `sqlState`: retried, a missing
    /// slot, or fatal ``Code/sourceNotReady``.
    private init(sqlState state: String, message: String, detail: String?) {
        if Self.retriedStates.contains(state) || Self.retriedClasses.contains(String(state.prefix(2))) {
            self = ReplicaError(.sourceUnreachable, "PostgreSQL: \(message) (SQLSTATE \(state))")
        } else if message.contains("replication slot"),
            state == "42704" || (message + (detail ?? "")).contains("invalidated")
        {
            self = ReplicaError(.slotMissing, "PostgreSQL: \(message)")
        } else {
            self = ReplicaError(.sourceNotReady, "PostgreSQL: \(message) (SQLSTATE \(state))")
        }
    }
}
