import Foundation
import Logging
import NIOCore
import PostgresNIO

/// The replica's one connection to PostgreSQL, with the queries it makes:
/// the catalog, the slot and publication, the copy and the change feed.
///
/// The session settings make PostgreSQL's text output of a value the same
/// whatever the server's configuration, so ``ColumnMapping`` reads one
/// format.
struct SourceConnection: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    /// How long a query may take before the connection is taken for dead.
    let timeout: Duration

    /// Sets the session's output formats.
    init(_ connection: PostgresConnection, timeout: Duration, logger: Logger) async throws {
        self.connection = connection
        self.logger = logger
        self.timeout = timeout
        for (name, value) in Self.sessionSettings {
            try await run(PostgresQuery(unsafeSQL: "SET \(name) = '\(value)'"))
        }
    }

    /// The settings that fix the text of values, for the copy's session
    /// and the replication connection's (where `pgoutput` writes them).
    static let sessionSettings: [(String, String)] = [
        ("DateStyle", "ISO"), ("TimeZone", "UTC"), ("extra_float_digits", "3"), ("bytea_output", "hex"),
        ("IntervalStyle", "postgres"),
    ]

    /// A connection whose session is already set up.
    private init(configured connection: PostgresConnection, timeout: Duration, logger: Logger) {
        self.connection = connection
        self.timeout = timeout
        self.logger = logger
    }

    /// Runs `body` within ``timeout``; when time is up, closes the
    /// connection (which ends what waits on it) and throws
    /// ``ReplicaError/Code/sourceUnreachable``.
    func guarded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withDeadline(
            timeout,
            onTimeout: { [connection] in
                let _: EventLoopFuture<Void> = connection.close()
            }, body)
    }

    /// The values of a query's single text column.
    func texts(_ query: PostgresQuery) async throws -> [String?] {
        try await guarded { [connection, logger] in
            var values: [String?] = []
            for try await row in try await connection.query(query, logger: logger) {
                values.append(try row.makeRandomAccess()[0].decode(String?.self))
            }
            return values
        }
    }

    /// The value of a query's single text cell.
    func text(_ query: PostgresQuery) async throws -> String? {
        try await texts(query).first ?? nil
    }

    /// Runs a statement and ignores its results.
    func run(_ query: PostgresQuery) async throws {
        try await guarded { [connection, logger] in
            _ = try await connection.query(query, logger: logger)
        }
    }

    /// PostgreSQL's `wal_level`, which must be `logical`.
    func walLevel() async throws -> String? {
        try await text("SELECT current_setting('wal_level')")
    }

    /// Names the session after the replica's slot (`application_name`), so
    /// that `pg_stat_activity` tells which session serves which slot, and
    /// ``ReplicationSlots`` refuses to drop the slot of a running replica.
    func nameSession(after slot: String) async throws {
        try await run("SELECT set_config('application_name', \(slot), false)")
    }

    /// Gives the session its default name back before the connection
    /// returns to the client's pool, also when the replica's task is
    /// cancelled (in a task of its own, within 2 s); closes the connection
    /// when that fails, so no session keeps the slot's name.
    func release() async {
        let connection = connection
        let quick = SourceConnection(configured: connection, timeout: .seconds(2), logger: logger)
        let reset = Task { try await quick.run("RESET application_name") }
        if (try? await reset.value) == nil {
            let _: EventLoopFuture<Void> = connection.close()
        }
    }

    /// Whether a slot of this name exists and still holds the log from its
    /// position on (a slot that exceeded `max_slot_wal_keep_size` is
    /// invalidated: `wal_status` is `lost`).
    func slotIsUsable(_ slot: String) async throws -> Bool {
        try await text(
            """
            SELECT slot_name::text FROM pg_replication_slots \
            WHERE slot_name = \(slot) AND wal_status IS DISTINCT FROM 'lost'
            """) != nil
    }

    /// The slot's confirmed position (where its next read starts), or
    /// `nil` when there is no such slot.
    func confirmedPosition(of slot: String) async throws -> LogSequenceNumber? {
        try await text(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = \(slot)"
        ).flatMap(LogSequenceNumber.init)
    }

    /// Creates a logical slot with `pgoutput`; returns its consistent point.
    /// PostgreSQL waits for the transactions in progress to end first, for
    /// as long as they last: this query alone has no deadline (closing the
    /// connection ends it).
    func createSlot(_ slot: String) async throws -> LogSequenceNumber {
        let rows = try await connection.query(
            "SELECT lsn::text FROM pg_create_logical_replication_slot(\(slot), 'pgoutput')", logger: logger)
        for try await text in rows.decode(String.self) {
            if let position = LogSequenceNumber(text) { return position }
        }
        throw ReplicaError(.unreadableChange, "PostgreSQL created the slot \(slot) without a position")
    }

    /// Takes the snapshot of a `REPEATABLE READ` transaction that has run
    /// nothing yet, and describes it.
    func takeSnapshot() async throws -> CopySnapshot {
        let rows = try await connection.query(
            "SELECT pg_current_snapshot()::text, pg_current_wal_insert_lsn()::text", logger: logger)
        for try await (snapshot, position) in rows.decode((String, String).self) {
            if let position = LogSequenceNumber(position), let snapshot = CopySnapshot(snapshot, position: position) {
                return snapshot
            }
        }
        throw ReplicaError(.unreadableChange, "PostgreSQL gave no snapshot")
    }

    /// Drops a slot if it exists and no session uses it.
    func dropSlotIfExists(_ slot: String) async throws {
        try await run(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = \(slot)")
    }

    /// Creates a publication of `tables`, dropping a previous one of the same
    /// name (left by a copy that did not finish).
    func createPublication(_ name: String, tables: [SourceTable]) async throws {
        try await dropPublicationIfExists(name)
        let list = tables.map(\.sqlName).joined(separator: ", ")
        try await run(PostgresQuery(unsafeSQL: "CREATE PUBLICATION \(quoted(name)) FOR TABLE \(list)"))
    }

    /// Drops a publication if it exists.
    func dropPublicationIfExists(_ name: String) async throws {
        try await run(PostgresQuery(unsafeSQL: "DROP PUBLICATION IF EXISTS \(quoted(name))"))
    }
}

/// `name` as a PostgreSQL identifier, in double quotes.
func quoted(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

extension SourceConnection {
    /// `pg_current_wal_insert_lsn()`, a record boundary, and
    /// `pg_current_wal_flush_lsn()`, the end of what can be decoded, read
    /// together.
    func logPositions() async throws -> (insert: LogSequenceNumber, flush: LogSequenceNumber) {
        let texts = try await guarded { [connection, logger] in
            let rows = try await connection.query(
                "SELECT pg_current_wal_insert_lsn()::text, pg_current_wal_flush_lsn()::text", logger: logger)
            var texts: [(String, String)] = []
            for try await row in rows.decode((String, String).self) { texts.append(row) }
            return texts.first.map { [$0.0, $0.1] } ?? []
        }
        guard texts.count == 2, let insert = LogSequenceNumber(texts[0]), let flush = LogSequenceNumber(texts[1]) else {
            throw ReplicaError(.unreadableChange, "PostgreSQL gave no log position")
        }
        return (insert, flush)
    }
}
