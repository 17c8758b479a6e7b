import DBWatch

/// Turns the `pgoutput` messages of one read of the slot into
/// ``ReplicatedTransaction``s with SQLite values, and checks every table
/// description the feed sends against the tables the replica was made for.
struct ChangeAssembler {
    let tables: [SourceTable]
    private let tableIndexByOID: [UInt32: Int]
    private var transaction: ReplicatedTransaction?

    init(tables: [SourceTable]) {
        self.tables = tables
        tableIndexByOID = Dictionary(uniqueKeysWithValues: tables.enumerated().map { ($1.oid, $0) })
    }

    /// Whether a transaction's `Begin` was read without its `Commit`.
    var hasOpenTransaction: Bool { transaction != nil }

    /// The transactions whose commit is among `messages`, in order (a read
    /// of the slot returns whole transactions, so none is left open), and
    /// the error that stopped the reading, if any: the transactions before
    /// it are to be applied, the one it is in and those after are not.
    ///
    /// The error is ``ReplicaError`` `schemaChanged` when a table's
    /// description differs, `unsupportedValue` when a value cannot be
    /// stored, `unreadableChange` for a message it cannot read.
    mutating func transactions(in messages: [[UInt8]]) -> (transactions: [ReplicatedTransaction], stop: ReplicaError?) {
        var complete: [ReplicatedTransaction] = []
        do {
            try read(messages, into: &complete)
            return (complete, nil)
        } catch {
            transaction = nil
            return (complete, error)
        }
    }

    private mutating func read(_ messages: [[UInt8]], into complete: inout [ReplicatedTransaction]) throws(ReplicaError)
    {
        for bytes in messages {
            let message: PgOutputMessage
            do {
                message = try PgOutputMessage(parsing: bytes)
            } catch {
                throw ReplicaError(.unreadableChange, "\(error)")
            }
            switch message {
            case .begin(let begin):
                transaction = ReplicatedTransaction(
                    endPosition: begin.finalPosition, commitPosition: begin.finalPosition,
                    transactionID: begin.transactionID, commitTime: begin.commitTime)
            case .commit(let commit):
                guard var finished = transaction else {
                    throw ReplicaError(.unreadableChange, "a commit without a transaction")
                }
                finished.endPosition = commit.endPosition
                finished.commitTime = commit.commitTime
                complete.append(finished)
                transaction = nil
            case .relation(let relation):
                try check(relation)
            case .insert(let relation, let newRow):
                let table = try tableIndex(relation)
                try append(.upsert(table: table, row: values(of: newRow, in: table).map { $0 ?? .null }))
            case .update(let relation, let oldKey, let newRow):
                let table = try tableIndex(relation)
                var key: [DatabaseValue]?
                if let oldKey { key = try keyValues(of: oldKey, in: table) }
                try append(.update(table: table, oldKey: key, row: values(of: newRow, in: table)))
            case .delete(let relation, let oldKey):
                let table = try tableIndex(relation)
                try append(.delete(table: table, key: keyValues(of: oldKey, in: table)))
            case .truncate(let relations, _, _):
                try append(.truncate(tables: relations.compactMap { tableIndexByOID[$0] }))
            case .ignored:
                break
            }
        }
    }

    private mutating func append(_ change: RowChange) throws(ReplicaError) {
        guard transaction != nil else { throw ReplicaError(.unreadableChange, "a change outside a transaction") }
        transaction?.changes.append(change)
    }

    private func check(_ relation: PgOutputMessage.Relation) throws(ReplicaError) {
        let namespace = relation.namespace.isEmpty ? "pg_catalog" : relation.namespace
        let name = "\(namespace).\(relation.name)"
        guard let index = tableIndexByOID[relation.id] else {
            if tables.contains(where: { $0.qualifiedName == name }) {
                throw ReplicaError(
                    .schemaChanged, table: name, "\(name) was dropped and created again in PostgreSQL")
            }
            throw ReplicaError(
                .schemaChanged, table: name, "\(name) is now published, but the replica was not made for it")
        }
        let table = tables[index]
        guard table.matches(relation) else {
            let columns = relation.columns.map { "\($0.name)\($0.isKey ? " key" : "")" }
            throw ReplicaError(
                .schemaChanged, table: table.qualifiedName,
                """
                \(table.qualifiedName) changed in PostgreSQL: its columns were \
                (\(table.columns.map(\.summary).joined(separator: ", "))) and are now \
                (\(columns.joined(separator: ", "))) (name \(name), types by OID \
                \(relation.columns.map { String($0.typeOID) }.joined(separator: ", ")))
                """)
        }
    }

    private func tableIndex(_ relation: UInt32) throws(ReplicaError) -> Int {
        guard let index = tableIndexByOID[relation] else {
            throw ReplicaError(.unreadableChange, "a change to table OID \(relation), which the replica does not know")
        }
        return index
    }

    /// The row's values; `nil` for an unchanged TOASTed value.
    private func values(of tuple: PgOutputMessage.TupleData, in index: Int) throws(ReplicaError) -> [DatabaseValue?] {
        let table = tables[index]
        guard tuple.values.count == table.columns.count else {
            throw ReplicaError(
                .schemaChanged, table: table.qualifiedName,
                "a row of \(table.qualifiedName) has \(tuple.values.count) values for \(table.columns.count) columns")
        }
        var values: [DatabaseValue?] = []
        values.reserveCapacity(tuple.values.count)
        for (column, value) in zip(table.columns, tuple.values) {
            switch value {
            case .null: values.append(.null)
            case .unchangedToast: values.append(nil)
            case .text(let bytes):
                do {
                    values.append(try column.mapping.databaseValue(fromText: bytes))
                } catch {
                    throw ReplicaError(
                        .unsupportedValue, table: table.qualifiedName, column: column.name,
                        "\(table.qualifiedName).\(column.name): \(error)")
                }
            }
        }
        return values
    }

    private func keyValues(of tuple: PgOutputMessage.TupleData, in index: Int) throws(ReplicaError) -> [DatabaseValue] {
        let all = try values(of: tuple, in: index)
        return tables[index].keyColumnIndexes.map { all[$0] ?? .null }
    }
}
