/// A replication slot that a DBWatch replica created, as
/// ``ReplicationSlots/list()`` reports it: what it holds back and whether a
/// replica uses it.
///
/// A slot keeps every part of PostgreSQL's log that its replica has not
/// confirmed yet: a slot whose replica is gone keeps WAL forever and can
/// fill the server's disk. Watch ``retainedBytes``; drop the slots of
/// replicas that are gone with ``ReplicationSlots/drop(_:)``.
///
/// ```swift
/// for slot in try await ReplicationSlots(client: client).list() where !slot.isActive {
///     print(slot.name, slot.database, slot.retainedBytes ?? 0)
/// }
/// ```
public struct ReplicationSlot: Sendable, Hashable {
    /// The slot's name, `dbwatch_<id>`; the replica's publication, if it
    /// made one, has the same name.
    public var name: String
    /// The database the slot decodes, where its publication is.
    public var database: String
    /// Whether a session is reading the slot at this moment. A running
    /// ``PostgresReplica`` reads its slot only while it fetches changes, so
    /// `false` does not mean that its replica is gone.
    public var isActive: Bool
    /// The process id of the PostgreSQL backend reading the slot, while
    /// ``isActive``.
    public var activePID: Int?
    /// The oldest log position the slot still needs (`restart_lsn`): the
    /// server keeps its log from there on.
    public var restartPosition: LogSequenceNumber?
    /// The position up to which the replica confirmed it applied every
    /// transaction (`confirmed_flush_lsn`).
    public var confirmedPosition: LogSequenceNumber?
    /// The bytes of log the slot holds back: the server's current position
    /// minus ``restartPosition``; `nil` when the slot holds nothing.
    public var retainedBytes: UInt64?
    /// PostgreSQL's `wal_status`: `reserved`, `extended`, `unreserved` or
    /// `lost` (the log the slot needs is gone: its replica must copy again).
    public var walStatus: String?

    /// A slot's description, as PostgreSQL's `pg_replication_slots` gives it.
    public init(
        name: String, database: String, isActive: Bool, activePID: Int? = nil,
        restartPosition: LogSequenceNumber? = nil, confirmedPosition: LogSequenceNumber? = nil,
        retainedBytes: UInt64? = nil, walStatus: String? = nil
    ) {
        self.name = name
        self.database = database
        self.isActive = isActive
        self.activePID = activePID
        self.restartPosition = restartPosition
        self.confirmedPosition = confirmedPosition
        self.retainedBytes = retainedBytes
        self.walStatus = walStatus
    }
}
