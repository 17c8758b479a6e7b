import ArgumentParser
import DBWatchPostgres
import Foundation
import Logging
import PostgresNIO

/// `dbwatch slots list|drop POSTGRES-URL`: the replication slots of DBWatch
/// replicas on a PostgreSQL server, and dropping the slot of a replica
/// that is gone (a slot nobody reads keeps PostgreSQL's log forever).
///
/// ```sh
/// dbwatch slots list postgres://postgres@db.example.com/shop
/// dbwatch slots drop postgres://postgres@db.example.com/shop dbwatch_node3
/// ```
struct SlotsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slots",
        abstract: "List the replication slots of DBWatch replicas on a PostgreSQL server, or drop one.",
        discussion: """
            Each replica (dbwatch replicate) reads PostgreSQL's log through a slot named \
            dbwatch_<id>; PostgreSQL keeps its log for every slot until the slot's reader \
            confirms it, so the slot of a replica that is gone holds the log forever and can fill \
            the server's disk. `list` shows them all, in every database of the server; `drop` \
            removes one (and its publication, of the same name) once its replica is gone for good: \
            that replica cannot continue and must copy again from scratch.

            \(ExitStatus.helpText)
            """,
        subcommands: [ListSlotsCommand.self, DropSlotCommand.self]
    )

    /// How long a command waits for PostgreSQL.
    static let timeout: Duration = .seconds(10)

    /// Runs `body` with the slots of `url`'s server, turning its errors into
    /// the command's exit.
    static func withSlots<T: Sendable>(
        _ url: String, _ body: @escaping @Sendable (ReplicationSlots) async throws -> T
    ) async throws -> T {
        let url = try PostgresURL.parse(url)
        let logger = Logger(label: "dbwatch", factory: { _ in SwiftLogNoOpLogHandler() })
        do {
            try await url.checkConnection(logger: logger)
            return try await url.withClient(logger: logger) { client in
                try await body(ReplicationSlots(client: client, timeout: timeout))
            }
        } catch {
            throw ErrorReport.exit(for: error)
        }
    }
}

/// `dbwatch slots list POSTGRES-URL [--json]`.
struct ListSlotsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the replication slots of DBWatch replicas (dbwatch_…), in every database of the server.",
        discussion: """
            One line per slot: its name, its database, whether a replica reads it now (with the \
            PostgreSQL backend's pid), restart_lsn (the oldest log it needs), confirmed_flush_lsn (up \
            to where its replica applied), the log it holds back (the server's position minus \
            restart_lsn) and wal_status (lost: the log it needs is gone). --json writes an array of \
            objects instead: name, database, active, activePID, restartLSN, confirmedFlushLSN, \
            retainedBytes, walStatus.
            """
    )

    @Argument(
        help: ArgumentHelp(
            "The PostgreSQL server: postgres://user:password@host:port/database.", valueName: "postgres-url"))
    var url: String

    @Flag(help: "Write JSON instead of a table.")
    var json = false

    func validate() throws {
        _ = try PostgresURL.parse(url)
    }

    func run() async throws {
        let slots = try await SlotsCommand.withSlots(url) { try await $0.list() }
        Output.standardOutput(json ? Self.json(slots) : Self.table(slots))
    }

    /// The slots as a table with a header line, or a sentence when there is none.
    static func table(_ slots: [ReplicationSlot]) -> String {
        guard !slots.isEmpty else { return "No replication slot of a DBWatch replica.\n" }
        let header = ["NAME", "DATABASE", "ACTIVE", "RESTART LSN", "CONFIRMED LSN", "WAL HELD", "WAL STATUS"]
        let rows = slots.map { slot in
            [
                slot.name, CellText.sanitized(slot.database),
                slot.isActive ? "yes" + (slot.activePID.map { " (pid \($0))" } ?? "") : "no",
                slot.restartPosition?.description ?? "-", slot.confirmedPosition?.description ?? "-",
                slot.retainedBytes.map(byteCount) ?? "-", CellText.sanitized(slot.walStatus ?? "-"),
            ]
        }
        let widths = header.indices.map { column in
            ([header] + rows).map { $0[column].count }.max() ?? 0
        }
        return ([header] + rows).map { row in
            row.indices.map { column in
                column == row.count - 1
                    ? row[column] : row[column].padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }

    /// `123 B`, `4.5 kB`, `16.0 MB`, `2.3 GB` (powers of 1,024).
    static func byteCount(_ bytes: UInt64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " " + units[unit]
    }

    /// The slots as a JSON array, one object per slot.
    static func json(_ slots: [ReplicationSlot]) -> String {
        struct Slot: Encodable {
            let name: String
            let database: String
            let active: Bool
            let activePID: Int?
            let restartLSN: String?
            let confirmedFlushLSN: String?
            let retainedBytes: UInt64?
            let walStatus: String?

            func encode(to encoder: any Encoder) throws {
                // Every key, null included.
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(name, forKey: .name)
                try container.encode(database, forKey: .database)
                try container.encode(active, forKey: .active)
                try container.encode(activePID, forKey: .activePID)
                try container.encode(restartLSN, forKey: .restartLSN)
                try container.encode(confirmedFlushLSN, forKey: .confirmedFlushLSN)
                try container.encode(retainedBytes, forKey: .retainedBytes)
                try container.encode(walStatus, forKey: .walStatus)
            }

            enum CodingKeys: String, CodingKey {
                case name, database, active, activePID, restartLSN, confirmedFlushLSN, retainedBytes, walStatus
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let values = slots.map { slot in
            Slot(
                name: slot.name, database: slot.database, active: slot.isActive, activePID: slot.activePID,
                restartLSN: slot.restartPosition?.description, confirmedFlushLSN: slot.confirmedPosition?.description,
                retainedBytes: slot.retainedBytes, walStatus: slot.walStatus)
        }
        // Strings, numbers, booleans and nulls always encode.
        let data = (try? encoder.encode(values)) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}

/// `dbwatch slots drop POSTGRES-URL SLOT`.
struct DropSlotCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drop",
        abstract: "Drop the slot of a DBWatch replica that is gone, and its publication.",
        discussion: """
            Drops the slot (pg_drop_replication_slot) and the publication of the same name, if any \
            (DROP PUBLICATION IF EXISTS). Only a replica's slot (dbwatch_ and 1 to 40 of a-z, 0-9, _) \
            that no session reads is dropped; the URL must name the slot's database (PostgreSQL \
            drops a logical slot only from there; `slots list` shows it). A name that is not a \
            replica's or a slot of another database exits 64, a slot in use 75, a missing one 1, \
            PostgreSQL unreachable or refusing 76. The replica that used the slot cannot continue: \
            remove its SQLite file, and it copies again from scratch. A running replica reads its \
            slot only while it fetches changes, so its slot shows as not active most of the time and \
            is not refused then: make sure the replica is gone before you drop its slot (a replica \
            whose slot is dropped stops with exit 76).
            """
    )

    @Argument(
        help: ArgumentHelp(
            "The PostgreSQL server: postgres://user:password@host:port/database (the slot's database).",
            valueName: "postgres-url"))
    var url: String

    @Argument(help: ArgumentHelp("The slot to drop: dbwatch_<id>.", valueName: "slot"))
    var slot: String

    func validate() throws {
        _ = try PostgresURL.parse(url)
        guard ReplicationSlots.isReplicaSlotName(slot) else {
            throw ValidationError(
                "\(CellText.sanitized(slot)) is not the name of a DBWatch replica's slot (dbwatch_ and 1 to 40 of a-z, 0-9, _)"
            )
        }
    }

    func run() async throws {
        let slot = slot
        try await SlotsCommand.withSlots(url) { try await $0.drop(slot) }
        Output.standardOutput("Dropped \(slot) and its publication, if it had one.\n")
    }
}
