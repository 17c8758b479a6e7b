import DBWatch
import Foundation
import NIOCore

extension PostgresReplica {
    /// How often, while streaming, the replica checks that its tables still
    /// have the shape it copied (a `DROP` or an `ALTER` that no row change
    /// followed sends nothing in the change feed).
    static let catalogCheckInterval = Duration.seconds(1)

    /// Follows the change feed over a replication connection from the
    /// file's position, applying each transaction as PostgreSQL streams it
    /// and confirming what the file durably holds, until cancelled or a
    /// fatal error. ``FeedStateMachine`` decides; this runs its I/O.
    ///
    /// Path: ``ReplicationConnection`` (bytes, messages) →
    /// ``FeedStateMachine/receive(_:)`` (transactions) →
    /// ``ReplicaStore/apply(_:statements:)`` (SQLite) →
    /// ``FeedStateMachine/batchApplied(through:)`` → a standby status update
    /// and ``publishApplied(_:)``.
    func stream(from source: SourceConnection, record: ReplicaRecord) async throws {
        var machine = FeedStateMachine(
            tables: record.tables, position: record.position, snapshot: record.copySnapshot)
        let statements = record.tables.map(TableStatements.init)
        try await ReplicationConnection.withConnection(
            to: server, settings: SourceConnection.sessionSettings, applicationName: record.slot, logger: logger
        ) { connection in
            let publications = quoted(record.publication).replacingOccurrences(of: "'", with: "''")
            let identity = try await connection.simpleQuery("IDENTIFY_SYSTEM")
            guard let row = identity.first, row.count >= 2, let system = row[0], let timeline = row[1] else {
                throw ReplicaError(.unreadableChange, "PostgreSQL's IDENTIFY_SYSTEM gave no system identifier")
            }
            let epoch = "pg-\(system)-\(timeline)"
            publishPositions(through: machine.applied, of: record, epoch: epoch)
            try await connection.startReplication(
                """
                START_REPLICATION SLOT \(quoted(record.slot)) LOGICAL \(record.position) \
                (proto_version '1', publication_names '\(publications)')
                """)
            logger.info(
                "replica streaming",
                metadata: ["dbwatch.slot": "\(record.slot)", "dbwatch.position": "\(record.position)"])
            update {
                $0.isConnected = true
                if $0.lastError?.isRetried == true { $0.lastError = nil }
            }
            let shared = Locked(StreamShared(applied: machine.applied))
            // The slot may be behind the file (confirmed after the SQLite
            // commit, so a crash in between leaves it there).
            try await connection.send(
                FrontendMessage.copyData(machine.statusUpdate(replyRequested: false, now: Self.now)))
            try await withThrowingTaskGroup(of: Void.self) { group in
                let channel = connection.channel
                let activity = connection.activity
                group.addTask {
                    await self.watch(source, record: record, channel: channel, activity: activity, shared: shared)
                }
                do {
                    try await receiveAndApply(
                        connection, machine: &machine, record: record, epoch: epoch, statements: statements,
                        shared: shared)
                } catch {
                    // The watcher closed the connection for a reason of its own.
                    if let failure = shared.withLock({ $0.failure }) { throw failure }
                    throw error
                }
            }
        }
    }

    /// Receives, applies and confirms, until an error ends the feed.
    private func receiveAndApply(
        _ connection: ReplicationConnection, machine: inout FeedStateMachine, record: ReplicaRecord, epoch: String,
        statements: [TableStatements], shared: Locked<StreamShared>
    ) async throws {
        var confirmed = machine.applied
        var catalogStopSeen = false
        while true {
            let messages = try await connection.receiveStreaming()
            let batch = machine.receive(messages)
            var appliedThrough: LogSequenceNumber?
            if !batch.transactions.isEmpty {
                do {
                    appliedThrough = try await store.apply(
                        batch.transactions, statements: statements, positionsFrom: Self.exactFrom(record))
                } catch let error as PartialApplyError {
                    if let position = error.appliedPosition { publishApplied(position) }
                    throw error.underlying
                }
                let now = Date().timeIntervalSince1970
                let changes = batch.transactions.reduce(0) { $0 + $1.changes.count }
                update {
                    $0.appliedTransactions += batch.transactions.count
                    $0.appliedChanges += changes
                    if let last = batch.transactions.last {
                        $0.lagSeconds = max(0, now - (Double(last.commitTime) / 1_000_000 + 946_684_800))
                    }
                }
            }
            var stop = machine.batchApplied(through: appliedThrough)
            if !catalogStopSeen, let catalogStop = shared.withLock({ $0.catalogStop }) {
                catalogStopSeen = true
                stop = stop ?? machine.catalogChanged(catalogStop.0, at: catalogStop.1)
            }
            publishApplied(machine.applied)
            publishPositions(through: machine.applied, of: record, epoch: epoch)
            let serverEnd = machine.serverEnd
            let received = machine.received
            update {
                if let serverEnd { $0.sourcePosition = max($0.sourcePosition ?? serverEnd, serverEnd) }
                if batch.caughtUp {
                    $0.lagSeconds = 0
                    $0.caughtUpAt = Date()
                    $0.caughtUpSinceConnecting = true
                    $0.sourcePosition = max($0.sourcePosition ?? received, received)
                }
            }
            if machine.applied > confirmed || batch.replyRequested || stop != nil {
                confirmed = machine.applied
                shared.withLock { ($0.applied, $0.received) = (confirmed, received) }
                try await connection.send(
                    FrontendMessage.copyData(machine.statusUpdate(replyRequested: false, now: Self.now)))
            }
            if let stop { throw stop }
        }
    }

    /// Once the file's state is the source's at `applied`
    /// (``exactFrom(_:)``), the epoch of positions is published, and the
    /// database's commit position moves to `applied` (past a copy's
    /// commits, numbered from 1). Only then: from there on, each commit is
    /// published at its own log position, so that two replicas number the
    /// same commit alike (moving the position with every keepalive would
    /// number the same state differently on each).
    private func publishPositions(through applied: LogSequenceNumber, of record: ReplicaRecord, epoch: String) {
        guard applied >= Self.exactFrom(record), status.positionEpoch != epoch else { return }
        store.database.advanceCommitPosition(to: applied.rawValue)
        update { $0.positionEpoch = epoch }
    }

    /// Runs beside the stream: checks the catalog every
    /// ``catalogCheckInterval``; asks PostgreSQL for a keepalive when the
    /// connection was quiet for a while (so a live server always answers)
    /// and, after a catalog change, until the stream reached it; closes the
    /// connection when nothing came for ``Configuration/queryTimeout`` (a
    /// peer that vanished without closing TCP).
    private func watch(
        _ source: SourceConnection, record: ReplicaRecord, channel: any Channel,
        activity: Locked<ContinuousClock.Instant>, shared: Locked<StreamShared>
    ) async {
        let timeout = configuration.queryTimeout
        let pingAfter = min(Duration.seconds(10), timeout / 3)
        var lastCatalogCheck = ContinuousClock.now
        var lastPing = ContinuousClock.now
        var stopping = false
        while !Task.isCancelled {
            try? await Task.sleep(for: stopping ? .milliseconds(20) : .milliseconds(100))
            if Task.isCancelled { return }
            let now = ContinuousClock.now
            let quiet = now - activity.withLock { $0 }
            if quiet > timeout {
                logger.warning("PostgreSQL sent nothing for \(quiet); reconnecting")
                shared.withLock {
                    $0.failure = ReplicaError(.sourceUnreachable, "PostgreSQL sent nothing for \(quiet)")
                }
                channel.close(promise: nil)
                return
            }
            if !stopping, now - lastCatalogCheck >= Self.catalogCheckInterval {
                lastCatalogCheck = now
                do {
                    if let error = try await catalogChange(source, record: record) {
                        // Changes committed before the DDL are still in the
                        // feed (decoded with the catalog of their time):
                        // they are applied before the replica stops.
                        let position = try await source.logPositions().insert
                        shared.withLock { $0.catalogStop = (error, position) }
                        stopping = true
                    }
                } catch {
                    shared.withLock { $0.failure = ReplicaError(classifying: error) }
                    channel.close(promise: nil)
                    return
                }
            }
            if stopping || (quiet >= pingAfter && now - lastPing >= pingAfter) {
                lastPing = now
                let (applied, received) = shared.withLock { ($0.applied, $0.received) }
                let status = StreamingMessage.statusUpdate(
                    received: max(received, applied), applied: applied, replyRequested: true, now: Self.now)
                try? await ReplicationConnection.send(FrontendMessage.copyData(status), on: channel)
            }
        }
    }

    /// Now, in microseconds since 2000-01-01 UTC, as PostgreSQL counts.
    static var now: Int64 { Int64((Date().timeIntervalSince1970 - 946_684_800) * 1_000_000) }

    /// The fatal error a table's current description gives, if it changed.
    func catalogChange(_ source: SourceConnection, record: ReplicaRecord) async throws -> ReplicaError? {
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

/// What the streaming loop and its watcher share.
struct StreamShared: Sendable {
    /// The positions last confirmed to PostgreSQL.
    var applied: LogSequenceNumber
    var received: LogSequenceNumber = .zero
    /// A catalog change the watcher found, and a log position after it.
    var catalogStop: (ReplicaError, LogSequenceNumber)?
    /// Why the watcher closed the connection.
    var failure: ReplicaError?
}
