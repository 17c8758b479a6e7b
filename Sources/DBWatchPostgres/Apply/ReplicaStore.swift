import DBWatch
import Foundation

/// The SQLite side of a replica: its record, its tables, and the
/// transactions that apply the change feed, all through the DBWatch
/// writer, so every observation of the file sees each applied transaction
/// as one commit.
struct ReplicaStore: Sendable {
    let database: any DatabaseWriter

    static let recordTable = "dbwatch_replica"

    /// The file's record, or `nil` when it holds no replica.
    func loadRecord() async throws -> ReplicaRecord? {
        try await database.read { db in
            let exists = try db.fetchOne(
                sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [Self.recordTable])
            guard exists != nil,
                let row = try db.fetchOne(
                    sql: """
                        SELECT slot, publication, ownsPublication, tables, copied, position, snapshot, snapshotPosition
                        FROM \(Self.recordTable)
                        """)
            else { return nil }
            let tablesJSON = try row.decode(String.self, at: 3)
            let tables = try JSONDecoder().decode([SourceTable].self, from: Data(tablesJSON.utf8))
            var snapshot: CopySnapshot?
            if let text = try row.decode(String?.self, at: 6), let position = try row.decode(Int64?.self, at: 7) {
                snapshot = CopySnapshot(text, position: LogSequenceNumber(rawValue: UInt64(bitPattern: position)))
            }
            return ReplicaRecord(
                slot: try row.decode(String.self, at: 0), publication: try row.decode(String.self, at: 1),
                ownsPublication: try row.decode(Bool.self, at: 2), tables: tables,
                isCopied: try row.decode(Bool.self, at: 4),
                position: LogSequenceNumber(rawValue: UInt64(bitPattern: try row.decode(Int64.self, at: 5))),
                copySnapshot: snapshot)
        }
    }

    /// Starts a first copy in one transaction: drops the tables of an
    /// unfinished or removed copy, creates `record`'s tables and writes the
    /// record, marked not copied.
    ///
    /// - Throws: ``ReplicaError`` `invalidConfiguration`, leaving the file
    ///   as it was, when it has a table of the same name that the replica
    ///   did not make.
    func beginCopy(_ record: ReplicaRecord, replacing previous: ReplicaRecord?) async throws {
        let tablesJSON = String(decoding: try JSONEncoder().encode(record.tables), as: UTF8.self)
        try await database.write { db in
            for table in previous?.tables ?? [] {
                try db.execute(sql: "DROP TABLE IF EXISTS \(quoted(table.name))")
            }
            for table in record.tables {
                // SQLite's names ignore ASCII case, as its own lookup does.
                let existing = try db.fetchOne(
                    String.self, sql: "SELECT name FROM sqlite_master WHERE name = ? COLLATE NOCASE",
                    arguments: [table.name])
                if let existing {
                    throw ReplicaError(
                        .invalidConfiguration, table: table.qualifiedName,
                        """
                        the SQLite file already has \(existing), which the replica did not make; \
                        the replica of \(table.qualifiedName) would replace it
                        """)
                }
            }
            try db.execute(sql: "DROP TABLE IF EXISTS \(Self.recordTable)")
            try db.execute(
                sql: """
                    CREATE TABLE \(Self.recordTable) (
                        id INTEGER PRIMARY KEY CHECK (id = 1), slot TEXT NOT NULL, publication TEXT NOT NULL,
                        ownsPublication INTEGER NOT NULL, tables TEXT NOT NULL, copied INTEGER NOT NULL,
                        position INTEGER NOT NULL, snapshot TEXT, snapshotPosition INTEGER)
                    """)
            for table in record.tables {
                try db.execute(sql: TableStatements(table).create)
            }
            try db.execute(
                sql: "INSERT INTO \(Self.recordTable) VALUES (1, ?, ?, ?, ?, 0, ?, NULL, NULL)",
                arguments: [
                    record.slot, record.publication, record.ownsPublication, tablesJSON,
                    Int64(bitPattern: record.position.rawValue),
                ])
        }
    }

    /// Writes copied rows of one table in one transaction.
    func insertCopiedRows(_ rows: [[DatabaseValue]], into statements: TableStatements) async throws {
        try await database.write { db in
            let statement = try db.cachedStatement(sql: statements.upsert)
            var arguments = StatementArguments()
            for row in rows {
                arguments.values = row
                try statement.execute(arguments: arguments)
            }
        }
    }

    /// Marks the copy finished, at the slot's consistent point, with the
    /// snapshot it read the tables in.
    func finishCopy(at position: LogSequenceNumber, snapshot: CopySnapshot) async throws {
        try await database.write { db in
            try db.execute(
                sql: "UPDATE \(Self.recordTable) SET copied = 1, position = ?, snapshot = ?, snapshotPosition = ?",
                arguments: [
                    Int64(bitPattern: position.rawValue), snapshot.text, Int64(bitPattern: snapshot.position.rawValue),
                ])
        }
    }

    /// The most row changes one SQLite transaction takes when several
    /// PostgreSQL transactions share it, so that the writer is not held
    /// for long.
    static let changesPerSharedTransaction = 10_000

    /// Applies transactions in order and stores the end position of the
    /// last one with it. Transactions that arrived together share SQLite
    /// transactions (up to ``changesPerSharedTransaction`` changes each; a
    /// larger PostgreSQL transaction is alone in its own): each is applied
    /// whole, so a reader sees only states PostgreSQL had, and a backlog
    /// pays SQLite's commit and the position's update once per group
    /// rather than once per PostgreSQL transaction. Each SQLite commit is
    /// published at the position it stores (``Database/setCommitPosition(_:)``),
    /// the end of its last PostgreSQL transaction. Returns the position
    /// of the last one committed. When a group fails, the groups before it
    /// stay committed and the error says so through ``PartialApplyError``.
    ///
    /// A commit is published at its stored position only from
    /// `positionsFrom` on (``PostgresReplica/exactFrom(_:)``): before it, the
    /// file may hold transactions of the copy's snapshot that come later in
    /// the log, and its state is no log position's.
    func apply(
        _ transactions: [ReplicatedTransaction], statements: [TableStatements], positionsFrom: LogSequenceNumber
    ) async throws -> LogSequenceNumber? {
        try await database.writeWithoutTransaction { db in
            var applied: LogSequenceNumber?
            var start = transactions.startIndex
            while start < transactions.endIndex {
                var end = start + 1
                var changes = transactions[start].changes.count
                while end < transactions.endIndex,
                    changes + transactions[end].changes.count <= Self.changesPerSharedTransaction
                {
                    changes += transactions[end].changes.count
                    end += 1
                }
                do {
                    try db.inTransaction(.immediate) {
                        for transaction in transactions[start..<end] {
                            try Self.apply(transaction, statements: statements, in: db)
                        }
                        try Self.store(transactions[end - 1].endPosition, in: db)
                        // Published at the stored position: a client's
                        // position is always one the file holds whole.
                        let position = transactions[end - 1].endPosition
                        if position >= positionsFrom { db.setCommitPosition(position.rawValue) }
                    }
                } catch {
                    throw PartialApplyError(appliedPosition: applied, underlying: error)
                }
                applied = transactions[end - 1].endPosition
                start = end
            }
            return applied
        }
    }

    /// Marks the replica removed (its slot dropped): the tables stay as a
    /// plain copy, and the next run copies them again, as after a copy that
    /// did not finish.
    func markRemoved() async throws {
        try await database.write { db in
            try db.execute(sql: "UPDATE \(Self.recordTable) SET copied = 0")
        }
    }

    private static func apply(_ transaction: ReplicatedTransaction, statements: [TableStatements], in db: Database)
        throws
    {
        var arguments = StatementArguments()
        for change in transaction.changes {
            switch change {
            case .upsert(let table, let row):
                arguments.values = row
                try db.cachedStatement(sql: statements[table].upsert).execute(arguments: arguments)
            case .update(let table, let oldKey, let row):
                let table = statements[table]
                let keyIndexes = table.table.keyColumnIndexes
                let key = oldKey ?? keyIndexes.map { row[$0] ?? .null }
                if row.allSatisfy({ $0 != nil }) {
                    arguments.values = row.map { $0! } + key
                    try db.cachedStatement(sql: table.updateAll).execute(arguments: arguments)
                } else {
                    let present = row.indices.filter { row[$0] != nil }
                    arguments.values = present.map { row[$0]! } + key
                    try db.cachedStatement(sql: table.update(columns: present)).execute(arguments: arguments)
                }
            case .delete(let table, let key):
                arguments.values = key
                try db.cachedStatement(sql: statements[table].delete).execute(arguments: arguments)
            case .truncate(let tables):
                for table in tables {
                    try db.cachedStatement(sql: statements[table].truncate).execute()
                }
            }
        }
    }

    /// Stores the position the file holds everything up to.
    private static func store(_ position: LogSequenceNumber, in db: Database) throws {
        var arguments = StatementArguments()
        arguments.values = [.integer(Int64(bitPattern: position.rawValue))]
        try db.cachedStatement(sql: "UPDATE \(recordTable) SET position = ?").execute(arguments: arguments)
    }
}

/// A batch of transactions failed part way: those up to `appliedPosition`
/// are committed.
struct PartialApplyError: Error {
    var appliedPosition: LogSequenceNumber?
    var underlying: any Error
}
