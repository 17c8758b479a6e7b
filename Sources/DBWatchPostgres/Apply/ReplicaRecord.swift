/// What the replica's SQLite file says about itself, in the table
/// `dbwatch_replica` (one row), written in the same transactions as the
/// replicated rows.
struct ReplicaRecord: Sendable, Equatable {
    /// The slot's name, `dbwatch_<id>`.
    var slot: String
    /// The publication followed.
    var publication: String
    /// Whether the replica created the publication (and drops it on removal).
    var ownsPublication: Bool
    /// The replicated tables as they were when the copy started.
    var tables: [SourceTable]
    /// Whether the first copy finished; a file whose copy did not is copied
    /// again from the start.
    var isCopied: Bool
    /// The position up to which every transaction is applied.
    var position: LogSequenceNumber
    /// The snapshot of the first copy, once it is taken: the transactions
    /// of the feed it saw are skipped.
    var copySnapshot: CopySnapshot?
}
