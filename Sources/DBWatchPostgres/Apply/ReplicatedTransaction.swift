import DBWatch

/// One PostgreSQL transaction of the change feed, with its values already
/// converted for SQLite: it is applied whole, in one SQLite transaction
/// (alone, or with the transactions that arrived with it).
struct ReplicatedTransaction: Sendable {
    /// The row changes, in the order PostgreSQL made them.
    var changes: [RowChange] = []
    /// The position just after its commit record: stored with it.
    var endPosition: LogSequenceNumber
    /// The position of its commit record.
    var commitPosition: LogSequenceNumber
    /// Its transaction id (32 bits, as the feed gives it).
    var transactionID: UInt32
    /// Its commit time in PostgreSQL, in microseconds since 2000-01-01 UTC.
    var commitTime: Int64
}

/// One change to a replicated table; tables are named by their index in the
/// replica's table list.
enum RowChange: Sendable {
    /// A new row, or a row already copied (the first changes after the copy
    /// may repeat it): written whole, key included.
    case upsert(table: Int, row: [DatabaseValue])
    /// A changed row. `oldKey` is the key before the change when it
    /// changed; `row` has `nil` for an unchanged TOASTed value, which keeps
    /// the replica's value.
    case update(table: Int, oldKey: [DatabaseValue]?, row: [DatabaseValue?])
    /// A deleted row, by its key.
    case delete(table: Int, key: [DatabaseValue])
    /// Tables emptied together.
    case truncate(tables: [Int])
}
