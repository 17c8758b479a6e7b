import DBWatch
import Foundation
import PostgresNIO

extension PostgresReplica {
    /// How often, while idle, the replica checks that its tables still
    /// have the shape it copied (a `DROP` or an `ALTER` that no row change
    /// followed sends nothing in the change feed).
    static let catalogCheckInterval = Duration.seconds(1)

    /// Polls the end of the log; when it moved, reads the slot and applies
    /// what it returns, until cancelled or a fatal error.
    ///
    /// The position the replica claims (``Status/appliedPosition``) is
    /// always a record boundary: the end of an applied transaction, or an
    /// earlier `pg_current_wal_insert_lsn()` that the flushed log has
    /// passed, after a read that reached the end. No commit record
    /// straddles such a position, so moving the slot there skips nothing.
    func stream(from source: SourceConnection, record: ReplicaRecord) async throws {
        // The slot may be behind the file (moved after the SQLite commit,
        // so a lost connection or a crash in between leaves it there) or
        // ahead of it (moved to a boundary that no transaction stored):
        // start from where it is, and bring it to the file's position.
        guard let confirmed = try await source.confirmedPosition(of: record.slot) else {
            throw ReplicaError(.slotMissing, "the replica's slot \(record.slot) is gone from PostgreSQL")
        }
        var feed = FeedPosition(claimed: record.position, advanced: confirmed)
        if feed.claimed > feed.advanced {
            try await source.advanceSlot(record.slot, to: feed.claimed)
            feed.advanced = feed.claimed
        }
        let statements = record.tables.map(TableStatements.init)
        var lastCatalogCheck = ContinuousClock.now
        while true {
            try Task.checkCancellation()
            let (insert, flush) = try await source.logPositions()
            let moved = flush > feed.claimed
            update {
                $0.sourcePosition = flush
                $0.isConnected = true
                if $0.lastError?.isRetried == true { $0.lastError = nil }
                // Caught up: nothing committed is waiting.
                if !moved { $0.lagSeconds = 0 }
            }
            if moved {
                try await readAndApply(source, record: record, statements: statements, feed: &feed, flush: flush)
            }
            if ContinuousClock.now - lastCatalogCheck >= Self.catalogCheckInterval {
                lastCatalogCheck = .now
                if let error = try await catalogChange(source, record: record) {
                    // Changes committed before the DDL are still in the
                    // feed (decoded with the catalog of their time):
                    // apply them, then stop.
                    let (_, flush) = try await source.logPositions()
                    try await readAndApply(source, record: record, statements: statements, feed: &feed, flush: flush)
                    throw error
                }
            } else if !moved {
                try await Task.sleep(for: configuration.pollInterval)
            }
            feed.boundary = insert
        }
    }

    /// Reads the slot until a read reaches the end of the log, applying
    /// every transaction after the claimed position.
    private func readAndApply(
        _ source: SourceConnection, record: ReplicaRecord, statements: [TableStatements], feed: inout FeedPosition,
        flush: LogSequenceNumber
    ) async throws {
        var assembler = ChangeAssembler(tables: record.tables)
        while true {
            let messages = try await source.peekChanges(
                slot: record.slot, publication: record.publication, limit: configuration.changesPerRead)
            let (assembled, stop) = assembler.transactions(in: messages)
            var transactions = assembled.filter { $0.endPosition > feed.claimed }
            if let snapshot = record.copySnapshot {
                // The copy holds these already: only their position is
                // stored.
                for index in transactions.indices
                where snapshot.holds(
                    transactionID: transactions[index].transactionID,
                    commitPosition: transactions[index].commitPosition)
                {
                    transactions[index].changes = []
                }
            }
            if !transactions.isEmpty {
                let applied: LogSequenceNumber?
                do {
                    applied = try await store.apply(transactions, statements: statements)
                } catch let error as PartialApplyError {
                    if let position = error.appliedPosition { publishApplied(position) }
                    throw error.underlying
                }
                if let applied {
                    feed.claimed = max(feed.claimed, applied)
                }
                let now = Date().timeIntervalSince1970
                let changes = transactions.reduce(0) { $0 + $1.changes.count }
                update {
                    $0.appliedTransactions += transactions.count
                    $0.appliedChanges += changes
                    if let last = transactions.last {
                        $0.lagSeconds = max(0, now - (Double(last.commitTime) / 1_000_000 + 946_684_800))
                    }
                }
            }
            if let stop {
                if feed.claimed > feed.advanced { try await source.advanceSlot(record.slot, to: feed.claimed) }
                publishApplied(feed.claimed)
                throw stop
            }
            let reachedEnd = messages.count < configuration.changesPerRead
            if reachedEnd, let boundary = feed.boundary, boundary <= flush {
                feed.claimed = max(feed.claimed, boundary)
            }
            if feed.claimed > feed.advanced {
                try await source.advanceSlot(record.slot, to: feed.claimed)
                feed.advanced = feed.claimed
            }
            publishApplied(feed.claimed)
            if reachedEnd { return }
        }
    }

    /// The fatal error a table's current description gives, if it changed.
    private func catalogChange(_ source: SourceConnection, record: ReplicaRecord) async throws -> ReplicaError? {
        for table in record.tables {
            let current: SourceTable?
            do {
                current = try await source.describeTable(table.sqlName)
            } catch let error as ReplicaError {
                return ReplicaError(
                    .schemaChanged, table: table.qualifiedName,
                    "\(table.qualifiedName) changed in PostgreSQL: \(error.message)")
            }
            guard let current else {
                return ReplicaError(
                    .tableDropped, table: table.qualifiedName,
                    "\(table.qualifiedName) was dropped or renamed in PostgreSQL")
            }
            if let difference = table.difference(from: current) {
                return ReplicaError(
                    .schemaChanged, table: table.qualifiedName,
                    "\(table.qualifiedName) changed in PostgreSQL: \(difference)")
            }
        }
        return nil
    }
}

/// Where the replica is in the log.
struct FeedPosition {
    /// Every transaction up to here is applied and committed in SQLite.
    var claimed: LogSequenceNumber
    /// The slot's confirmed position, as far as this run moved it.
    var advanced: LogSequenceNumber
    /// A record boundary seen at the previous poll
    /// (`pg_current_wal_insert_lsn()`): claimable once the flushed log
    /// passed it and a read reached the end.
    var boundary: LogSequenceNumber?
}
