import PostgresNIO

extension PostgresReplica {
    /// Removes the replica from PostgreSQL: drops its slot, so PostgreSQL
    /// stops keeping log for it, and the publication it created. The SQLite
    /// tables stay as a plain copy, no longer followed; a later ``run()``
    /// on the file replaces them with a new copy, with a new slot.
    ///
    /// A replica that is not removed keeps its slot while it is stopped, to
    /// go on where it stopped: an abandoned slot keeps PostgreSQL's log
    /// forever (`dbwatch slots list` shows them).
    ///
    /// - Throws: ``ReplicaError`` `stillRunning` while ``run()`` runs.
    public func remove() async throws {
        let running = state.withLock { $0.isRunning }
        guard !running else { throw ReplicaError(.stillRunning, "stop the replica before removing it") }
        guard let record = try await store.loadRecord() else { return }
        try await client.withConnection { connection in
            let source = try await SourceConnection(connection, timeout: configuration.queryTimeout, logger: logger)
            try await source.dropSlotIfExists(record.slot)
            if record.ownsPublication {
                try await source.dropPublicationIfExists(record.publication)
            }
        }
        try await store.markRemoved()
        logger.info("replica removed", metadata: ["dbwatch.slot": "\(record.slot)"])
    }
}
