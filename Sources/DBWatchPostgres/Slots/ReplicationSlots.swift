import Logging
import PostgresNIO

/// The replication slots of DBWatch replicas on a PostgreSQL server: list
/// them, and drop the slot of a replica that is gone (a slot nobody reads
/// keeps PostgreSQL's log forever).
///
/// A replica's slot is named `dbwatch_<id>`, `<id>` being 1 to 40
/// characters among `a-z`, `0-9` and `_`, and the publication the replica
/// creates (unless it follows a publication of yours) has the same name.
/// ``drop(_:)`` drops only such slots, and only when no replica reads them.
///
/// ```swift
/// let slots = ReplicationSlots(client: client)   // a running PostgresClient
/// for slot in try await slots.list() where !slot.isActive {
///     try await slots.drop(slot.name)
/// }
/// ```
public struct ReplicationSlots: Sendable {
    /// The client whose server and database the slots are looked up in;
    /// it must be running (`client.run()`, or in a `ServiceGroup`).
    public let client: PostgresClient
    /// How long ``list()`` and ``drop(_:)`` wait for PostgreSQL before they
    /// fail with ``ReplicationSlotError/Code/sourceFailed``: a client whose
    /// server cannot be reached retries its connection without end.
    public var timeout: Duration
    let logger: Logger

    /// The slots of `client`'s server.
    ///
    /// - Parameters:
    ///   - client: a running client.
    ///   - timeout: the longest wait for PostgreSQL (see ``timeout``).
    ///   - logger: where the queries are logged (at debug level), if anywhere.
    public init(client: PostgresClient, timeout: Duration = .seconds(30), logger: Logger? = nil) {
        self.client = client
        self.timeout = timeout
        self.logger = logger ?? Logger(label: "dbwatch.slots", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    /// Whether `name` is a DBWatch replica's slot name: `dbwatch_` and 1 to
    /// 40 characters among `a-z`, `0-9` and `_`.
    ///
    /// ```swift
    /// ReplicationSlots.isReplicaSlotName("dbwatch_node1")   // true
    /// ReplicationSlots.isReplicaSlotName("debezium")        // false
    /// ```
    public static func isReplicaSlotName(_ name: String) -> Bool {
        guard name.hasPrefix(namePrefix) else { return false }
        let id = name.utf8.dropFirst(namePrefix.utf8.count)
        return (1...40).contains(id.count)
            && id.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_")
            }
    }

    /// `dbwatch_`, the start of every replica's slot name.
    public static let namePrefix = "dbwatch_"

    /// The logical slots of the whole server (every database) whose names
    /// are DBWatch replicas' (see ``isReplicaSlotName(_:)``), by name.
    ///
    /// - Throws: ``ReplicationSlotError`` with ``ReplicationSlotError/Code/sourceFailed``
    ///   when PostgreSQL cannot be reached or refuses.
    public func list() async throws -> [ReplicationSlot] {
        try await withSourceErrors(slot: nil, doing: "listing the replication slots") {
            let rows = try await client.query(
                """
                SELECT slot_name::text, database::text, active OR user_pid IS NOT NULL,
                       coalesce(active_pid, user_pid),
                       restart_lsn::text, confirmed_flush_lsn::text,
                       (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_receive_lsn() ELSE pg_current_wal_lsn() END
                        - restart_lsn)::int8,
                       wal_status
                FROM pg_replication_slots
                LEFT JOIN LATERAL (
                    SELECT min(pid) AS user_pid FROM pg_stat_activity WHERE application_name = slot_name
                ) AS replica_session ON true
                WHERE slot_type = 'logical' AND slot_name ~ '^dbwatch_[a-z0-9_]{1,40}$'
                ORDER BY slot_name
                """, logger: logger)
            var slots: [ReplicationSlot] = []
            for try await (name, database, active, pid, restart, confirmed, retained, walStatus) in rows.decode(
                (String, String?, Bool, Int32?, String?, String?, Int64?, String?).self)
            where Self.isReplicaSlotName(name) {
                slots.append(
                    ReplicationSlot(
                        name: name, database: database ?? "", isActive: active, activePID: pid.map(Int.init),
                        restartPosition: restart.flatMap(LogSequenceNumber.init),
                        confirmedPosition: confirmed.flatMap(LogSequenceNumber.init),
                        retainedBytes: retained.map { UInt64(max(0, $0)) }, walStatus: walStatus))
            }
            return slots
        }
    }

    /// Drops the slot `name` and the publication of the same name, if any:
    /// the server stops keeping log for it. The replica that used it cannot
    /// continue: its SQLite file must be copied again from scratch.
    ///
    /// A slot is in use while PostgreSQL reads it for a replica, or while a
    /// session is named after it (a running replica names its connection
    /// `application_name = <slot>`): such a slot is refused. A replica
    /// whose slot is dropped anyway stops with
    /// ``ReplicaError/Code/slotMissing``.
    ///
    /// The client must be connected to the slot's database (see
    /// ``ReplicationSlot/database``): PostgreSQL drops a logical slot only
    /// there, and the publication lives there.
    ///
    /// - Throws: ``ReplicationSlotError`` with
    ///   ``ReplicationSlotError/Code/notReplicaSlot`` for a name that is not a
    ///   replica's, ``ReplicationSlotError/Code/slotNotFound``,
    ///   ``ReplicationSlotError/Code/slotActive`` while a replica reads it,
    ///   ``ReplicationSlotError/Code/otherDatabase``, or
    ///   ``ReplicationSlotError/Code/sourceFailed``.
    public func drop(_ name: String) async throws {
        guard Self.isReplicaSlotName(name) else {
            throw ReplicationSlotError(
                .notReplicaSlot, slot: name,
                "\(name) is not the name of a DBWatch replica's slot (dbwatch_ and 1 to 40 of a-z, 0-9, _); "
                    + "dbwatch drops only the slots its replicas create")
        }
        let logger = logger
        try await withSourceErrors(slot: name, doing: "dropping the slot \(name)") {
            try await client.withConnection { connection in
                let rows = try await connection.query(
                    """
                    SELECT database::text, current_database()::text, active OR user_pid IS NOT NULL,
                        coalesce(active_pid, user_pid)
                    FROM pg_replication_slots
                    LEFT JOIN LATERAL (
                        SELECT min(pid) AS user_pid FROM pg_stat_activity WHERE application_name = slot_name
                    ) AS replica_session ON true
                    WHERE slot_name = \(name)
                    """, logger: logger)
                var found: (database: String?, current: String, active: Bool, pid: Int32?)?
                for try await row in rows.decode((String?, String, Bool, Int32?).self) { found = row }
                guard let found else {
                    throw ReplicationSlotError(.slotNotFound, slot: name, "no replication slot is named \(name)")
                }
                guard !found.active else {
                    throw ReplicationSlotError(
                        .slotActive, slot: name,
                        "\(name) is in use\(found.pid.map { " by the PostgreSQL backend \($0)" } ?? ""): "
                            + "stop its replica first")
                }
                guard let database = found.database, database == found.current else {
                    throw ReplicationSlotError(
                        .otherDatabase, slot: name,
                        "\(name) belongs to the database \(found.database ?? "?"), not \(found.current): "
                            + "connect to \(found.database ?? "its database") to drop it")
                }
                do {
                    try await connection.query("SELECT pg_drop_replication_slot(\(name))", logger: logger)
                } catch  where ReplicationSlotError.sqlState(of: error) == "55006" {
                    // object_in_use: a replica started reading it meanwhile.
                    throw ReplicationSlotError(.slotActive, slot: name, "\(name) is in use: stop its replica first")
                } catch  where ReplicationSlotError.sqlState(of: error) == "42704" {
                    // undefined_object: dropped by someone else meanwhile.
                    throw ReplicationSlotError(.slotNotFound, slot: name, "no replication slot is named \(name)")
                }
                // The name has only a-z, 0-9 and _, checked above: safe as an identifier.
                try await connection.query(
                    PostgresQuery(unsafeSQL: "DROP PUBLICATION IF EXISTS \"\(name)\""), logger: logger)
            }
        }
    }

    /// Runs `body` for at most ``timeout``, turning any error but a
    /// ``ReplicationSlotError`` into one with
    /// ``ReplicationSlotError/Code/sourceFailed``.
    private func withSourceErrors<T: Sendable>(
        slot: String?, doing what: String, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let timeout = timeout
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let result = try await group.next(), let value = result else {
                    throw ReplicationSlotError(
                        .sourceFailed, slot: slot,
                        "\(what) failed: PostgreSQL did not answer within \(timeout) (is it running and reachable?)")
                }
                return value
            }
        } catch let error as ReplicationSlotError {
            throw error
        } catch {
            throw ReplicationSlotError.sourceFailed(error, slot: slot, doing: what)
        }
    }
}
