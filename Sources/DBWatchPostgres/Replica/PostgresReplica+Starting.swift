import DBWatch
import PostgresNIO

extension PostgresReplica {
    /// Checks the source against the file, copies the tables when the file
    /// holds no finished replica, then follows the change feed.
    func follow(_ source: SourceConnection) async throws {
        update { $0.phase = .starting }
        let walLevel = try await source.walLevel()
        guard walLevel == "logical" else {
            throw ReplicaError(
                .sourceNotReady,
                "PostgreSQL's wal_level is \(walLevel ?? "unknown"); logical decoding needs wal_level = logical")
        }
        let tables = try await describeConfiguredTables(source)
        var record = try await store.loadRecord()
        if let existing = record, existing.isCopied {
            try checkUnchanged(existing, current: tables)
            guard try await source.slotIsUsable(existing.slot) else {
                throw ReplicaError(
                    .slotMissing,
                    """
                    the replica's slot \(existing.slot) is gone from PostgreSQL or invalidated, so changes may \
                    be lost; \
                    remove the replica's file and start again
                    """)
            }
            try await source.nameSession(after: existing.slot)
            logger.info(
                "replica resumes",
                metadata: ["dbwatch.slot": "\(existing.slot)", "dbwatch.position": "\(existing.position)"])
        } else {
            record = try await copy(tables, from: source, replacing: record)
        }
        guard let record else { return }
        // The file holds every source transaction up to its position: its
        // commits are numbered from there (see `Status.positionEpoch`).
        if record.position >= Self.exactFrom(record) {
            store.database.advanceCommitPosition(to: record.position.rawValue)
        }
        update {
            $0.slotName = record.slot
            $0.phase = .streaming
        }
        publishApplied(record.position)
        try await stream(from: source, record: record)
    }

    /// The log position from which the file's state is exactly the
    /// source's at its applied position: the copy's snapshot may hold
    /// transactions that commit after the slot's start, and until the
    /// replica has applied past the snapshot's position, its state is no
    /// single position's. Positions (``Status/positionEpoch``) are
    /// published from there on only.
    static func exactFrom(_ record: ReplicaRecord) -> LogSequenceNumber {
        record.copySnapshot?.position ?? .zero
    }

    private func describeConfiguredTables(_ source: SourceConnection) async throws -> [SourceTable] {
        var names = configuration.tables
        if let publication = configuration.publication {
            guard let published = try await source.tablesOfPublication(publication) else {
                throw ReplicaError(.tableNotFound, "there is no publication \(publication)")
            }
            guard !published.isEmpty else {
                throw ReplicaError(.invalidConfiguration, "publication \(publication) publishes no table")
            }
            if let shortcoming = try await source.publicationShortcoming(publication) {
                throw ReplicaError(.invalidConfiguration, shortcoming)
            }
            names = published
        }
        var tables: [SourceTable] = []
        for name in names {
            guard let table = try await source.describeTable(name) else {
                throw ReplicaError(.tableNotFound, table: name, "there is no table \(name) in PostgreSQL")
            }
            // SQLite's names ignore ASCII case.
            let sqliteName = table.name.lowercasedASCII
            if let same = tables.first(where: { $0.name.lowercasedASCII == sqliteName }) {
                throw ReplicaError(
                    .invalidConfiguration, table: table.qualifiedName,
                    "\(same.qualifiedName) and \(table.qualifiedName) would both be the SQLite table \(table.name)")
            }
            if sqliteName == ReplicaStore.recordTable || sqliteName.hasPrefix("sqlite_") {
                throw ReplicaError(
                    .invalidConfiguration, table: table.qualifiedName,
                    "\(table.qualifiedName) cannot be a SQLite table of the replica: SQLite or the replica uses its name"
                )
            }
            tables.append(table)
        }
        return tables
    }

    private func checkUnchanged(_ record: ReplicaRecord, current: [SourceTable]) throws(ReplicaError) {
        let before = Set(record.tables.map(\.qualifiedName))
        let now = Set(current.map(\.qualifiedName))
        guard before == now, configuration.publication.map({ $0 == record.publication }) ?? record.ownsPublication
        else {
            throw ReplicaError(
                .differentSource,
                """
                the file replicates \(before.sorted().joined(separator: ", ")) (publication \(record.publication)), \
                not \(now.sorted().joined(separator: ", "))
                """)
        }
        for table in record.tables {
            guard let currentTable = current.first(where: { $0.qualifiedName == table.qualifiedName }) else { continue }
            if let difference = table.difference(from: currentTable) {
                throw ReplicaError(
                    .schemaChanged, table: table.qualifiedName,
                    "\(table.qualifiedName) changed in PostgreSQL: \(difference)")
            }
        }
    }

    /// The first copy: the slot first, then the tables in one snapshot.
    private func copy(_ tables: [SourceTable], from source: SourceConnection, replacing previous: ReplicaRecord?)
        async throws -> ReplicaRecord
    {
        update { $0.phase = .copying }
        let slot = previous?.slot ?? "dbwatch_" + String(UInt64.random(in: 1...UInt64.max), radix: 16)
        let publication = configuration.publication ?? slot
        var record = ReplicaRecord(
            slot: slot, publication: publication, ownsPublication: configuration.publication == nil,
            tables: tables, isCopied: false, position: .zero)
        update { $0.slotName = slot }
        logger.info(
            "replica copies its tables", metadata: ["dbwatch.slot": "\(slot)", "dbwatch.tables": "\(tables.count)"])
        // The record goes first, so that a crash from here on leaves a file
        // that names the slot to drop and copies again.
        try await store.beginCopy(record, replacing: previous)
        try await source.nameSession(after: slot)
        try await source.dropSlotIfExists(slot)
        if record.ownsPublication {
            try await source.createPublication(publication, tables: tables)
        }
        // PostgreSQL makes the slot wait for the transactions in progress
        // to end, and postgres-nio does not stop a query when its task is
        // cancelled: closing the connection ends the wait, so a shutdown
        // meanwhile returns at once.
        let start = try await withTaskCancellationHandler {
            try await source.createSlot(slot)
        } onCancel: {
            source.connection.close().whenComplete { _ in }
        }
        try await source.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        let snapshot: CopySnapshot
        do {
            snapshot = try await source.takeSnapshot()
            for table in tables {
                try await copyRows(of: table, from: source)
            }
            try await source.run("COMMIT")
        } catch {
            // The slot is of no use to a copy that did not finish (the next
            // run makes a new one), and it keeps PostgreSQL's log meanwhile.
            try? await source.run("ROLLBACK")
            try? await source.dropSlotIfExists(slot)
            throw error
        }
        try await store.finishCopy(at: start, snapshot: snapshot)
        record.isCopied = true
        record.position = start
        record.copySnapshot = snapshot
        logger.info("replica copied its tables", metadata: ["dbwatch.slot": "\(slot)", "dbwatch.position": "\(start)"])
        return record
    }

    private func copyRows(of table: SourceTable, from source: SourceConnection) async throws {
        let statements = TableStatements(table)
        // `format('%s', value)` writes a value with its type's output
        // function, as `pgoutput` does; a cast to text may not
        // (`char(n)::text` drops the padding, `bool::text` says `true`).
        let columns = table.columns.map {
            "CASE WHEN \(quoted($0.name)) IS NULL THEN NULL ELSE format('%s', \(quoted($0.name))) END"
        }.joined(separator: ", ")
        let rows = try await source.connection.query(
            PostgresQuery(unsafeSQL: "SELECT \(columns) FROM \(table.sqlName)"),
            logger: logger)
        let chunkSize = configuration.rowsPerCopyTransaction
        var chunk: [[DatabaseValue]] = []
        chunk.reserveCapacity(chunkSize)
        for try await row in rows {
            var values: [DatabaseValue] = []
            values.reserveCapacity(table.columns.count)
            for (column, cell) in zip(table.columns, row) {
                guard let buffer = cell.bytes else {
                    values.append(.null)
                    continue
                }
                do {
                    values.append(try column.mapping.databaseValue(fromText: Array(buffer.readableBytesView)))
                } catch {
                    throw ReplicaError(
                        .unsupportedValue, table: table.qualifiedName, column: column.name,
                        "\(table.qualifiedName).\(column.name): \(error)")
                }
            }
            chunk.append(values)
            if chunk.count == chunkSize {
                try await store.insertCopiedRows(chunk, into: statements)
                chunk.removeAll(keepingCapacity: true)
            }
        }
        if !chunk.isEmpty {
            try await store.insertCopiedRows(chunk, into: statements)
        }
    }
}

extension String {
    /// The string with A to Z lowered, as SQLite compares names.
    fileprivate var lowercasedASCII: String {
        String(decoding: utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }
}
