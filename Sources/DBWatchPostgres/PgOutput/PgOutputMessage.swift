/// One message of `pgoutput`, PostgreSQL's built-in logical decoding
/// plugin, protocol version 1, as an `XLogData` message of the replication
/// stream carries it (one message each).
///
/// Reference: PostgreSQL's "Logical Replication Message Formats".
enum PgOutputMessage: Sendable, Equatable {
    /// `B`: a transaction starts.
    case begin(Begin)
    /// `C`: the transaction commits.
    case commit(Commit)
    /// `R`: the shape of a table, sent before the first change to it in a
    /// session and again after its definition changed.
    case relation(Relation)
    /// `I`: a new row.
    case insert(relation: UInt32, newRow: TupleData)
    /// `U`: a changed row. `oldKey` is the old key (`K`) when the key
    /// changed, or the whole old row (`O`) with `REPLICA IDENTITY FULL`;
    /// `nil` when the key did not change.
    case update(relation: UInt32, oldKey: TupleData?, newRow: TupleData)
    /// `D`: a deleted row, identified by its key (`K`) or whole row (`O`).
    case delete(relation: UInt32, oldKey: TupleData)
    /// `T`: tables truncated together.
    case truncate(relations: [UInt32], cascade: Bool, restartIdentity: Bool)
    /// A message the replica does not need (`Y` type, `O` origin, `M`
    /// logical message), by its tag byte.
    case ignored(tag: UInt8)

    /// The start of a transaction.
    struct Begin: Sendable, Equatable {
        /// The position of the transaction's commit record.
        var finalPosition: LogSequenceNumber
        /// The commit time, in microseconds since 2000-01-01 00:00 UTC.
        var commitTime: Int64
        /// The transaction's id.
        var transactionID: UInt32
    }

    /// The end of a transaction.
    struct Commit: Sendable, Equatable {
        /// The position of the commit record.
        var commitPosition: LogSequenceNumber
        /// The position just after the commit record: a replica that has
        /// applied this transaction is at least here.
        var endPosition: LogSequenceNumber
        /// The commit time, in microseconds since 2000-01-01 00:00 UTC.
        var commitTime: Int64
    }

    /// A table's shape as the change feed describes it.
    struct Relation: Sendable, Equatable {
        /// The table's OID.
        var id: UInt32
        /// Its schema (`public`).
        var namespace: String
        /// Its name.
        var name: String
        /// `REPLICA IDENTITY`: `d` default (the primary key), `n` nothing,
        /// `f` full, `i` an index.
        var replicaIdentity: UInt8
        /// Its columns, in order.
        var columns: [Column]

        /// One column of a ``Relation``.
        struct Column: Sendable, Equatable {
            /// Whether the column is part of the key.
            var isKey: Bool
            /// The column's name.
            var name: String
            /// The OID of its type.
            var typeOID: UInt32
            /// Its type modifier (`atttypmod`), -1 when none.
            var typeModifier: Int32
        }
    }

    /// A row's values, one per column of the relation.
    struct TupleData: Sendable, Equatable {
        /// The values, in the relation's column order.
        var values: [TupleValue]
    }

    /// One value of a row.
    enum TupleValue: Sendable, Equatable {
        /// `n`: NULL.
        case null
        /// `u`: a TOASTed value that did not change (an update only sends
        /// it when it changed); the replica keeps the value it has.
        case unchangedToast
        /// `t`: the value in PostgreSQL's text output format.
        case text([UInt8])
    }
}

/// A `pgoutput` message that could not be read: truncated, or with a tag or
/// a value kind the replica does not request.
struct PgOutputParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    var message: String
    /// The byte offset in the message where it was found.
    var offset: Int

    var description: String { "pgoutput message unreadable at byte \(offset): \(message)" }
}
