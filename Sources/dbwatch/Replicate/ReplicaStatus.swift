import DBWatchPostgres

/// The replica's status as `replicate` reads it, `nil` while the replica
/// does not publish one.
func replicaStatus(_ replica: PostgresReplica) -> PostgresReplica.Status? {
    nil
}
