import ArgumentParser
import DBWatchPostgres
import Testing

@testable import dbwatch

/// `replicate` and `slots`: their command lines, PostgreSQL URLs, status
/// lines and output, in process.
@Suite("dbwatch replicate and slots: arguments and URLs")
struct ReplicateParsingTests {
    @Test func aFullURLGivesEveryPart() throws {
        let url = try PostgresURL.parse("postgres://app:s%40cret@db.example.com:6543/shop?sslmode=require")
        #expect(url.host == "db.example.com" && url.port == 6543)
        #expect(url.username == "app" && url.password == "s@cret")
        #expect(url.database == "shop" && url.sslMode == .require)
        #expect(url.redacted == "postgres://app@db.example.com:6543/shop")
        let configuration = url.clientConfiguration
        #expect(configuration.host == "db.example.com" && configuration.port == 6543)
        #expect(configuration.username == "app" && configuration.password == "s@cret")
        #expect(configuration.database == "shop")
    }

    @Test func defaultsAreLibpqs() throws {
        let url = try PostgresURL.parse("postgresql://postgres@127.0.0.1/")
        #expect(url.port == 5432 && url.password == nil && url.database == "postgres" && url.sslMode == .prefer)
        #expect(try PostgresURL.parse("POSTGRES://u@h/db?sslmode=disable").sslMode == .disable)
        #expect(try PostgresURL.parse("postgres://u@h/db?sslmode=verify-full").sslMode == .require)
        let ipv6 = try PostgresURL.parse("postgres://u@[::1]:5433/db")
        #expect(ipv6.host == "::1" && ipv6.port == 5433 && ipv6.redacted == "postgres://u@[::1]:5433/db")
    }

    @Test(arguments: [
        "", "db.example.com", "mysql://u@h/db", "postgres://h/db", "postgres://u@/db", "postgres://u@h:0/db",
        "postgres://u@h:70000/db", "postgres://u@h/db/extra", "postgres://u@h/db?sslmode=allow",
        "postgres://u@h/db?sslmode=", "postgres://u@h/db?application_name=x", "postgres://u@h:port/db",
    ])
    func badURLsAreUsageErrors(url: String) {
        #expect(throws: ValidationError.self) { _ = try PostgresURL.parse(url) }
    }

    @Test func aBadURLsMessageHidesThePassword() throws {
        do {
            _ = try PostgresURL.parse("postgres://u:hunter2@h/db?sslmode=bogus")
            Issue.record("no error")
        } catch let error as ValidationError {
            #expect(!error.message.contains("hunter2"))
            #expect(error.message.contains("sslmode"))
        }
    }

    @Test func replicateTakesTablesAndItsOptions() throws {
        let command = try DBWatchCommand.parseAsRoot([
            "replicate", "postgres://u@h/db", "replica.sqlite", "--table", "player", "--table", "public.team",
            "--quiet",
        ])
        let replicate = try #require(command as? ReplicateCommand)
        #expect(replicate.url == "postgres://u@h/db" && replicate.database == "replica.sqlite")
        #expect(replicate.quiet)
        let configuration = replicate.replicaConfiguration
        #expect(configuration.tables == ["player", "public.team"] && configuration.publication == nil)
        let defaults = try #require(
            try DBWatchCommand.parseAsRoot(["replicate", "postgres://u@h/db", "r.sqlite", "--table", "t"])
                as? ReplicateCommand)
        #expect(!defaults.quiet)
        let publication = try #require(
            try DBWatchCommand.parseAsRoot(["replicate", "postgres://u@h/db", "r.sqlite", "--publication", "shop"])
                as? ReplicateCommand)
        #expect(publication.replicaConfiguration.publication == "shop")
        #expect(publication.replicaConfiguration.tables.isEmpty)
    }

    @Test(arguments: [
        ["replicate", "postgres://u@h/db", "r.sqlite"],
        ["replicate", "postgres://u@h/db"],
        ["replicate", "http://u@h/db", "r.sqlite", "--table", "t"],
        ["replicate", "postgres://u@h/db", "r.sqlite", "--table", "t", "--publication", "p"],
        ["replicate", "postgres://u@h/db", "r.sqlite", "--publication", ""],
        ["replicate", "postgres://u@h/db", "r.sqlite", "--table", ""],
        ["replicate", "postgres://u@h/db", "r.sqlite", "--table", "t", "--table", "t"],
        ["slots", "list"],
        ["slots", "list", "mysql://u@h/db"],
        ["slots", "drop", "postgres://u@h/db"],
        ["slots", "drop", "postgres://u@h/db", "someone_else"],
        ["slots", "drop", "postgres://u@h/db", "dbwatch_UPPER"],
    ])
    func badArgumentsAreUsageErrors(arguments: [String]) {
        #expect(throws: (any Error).self) { _ = try DBWatchCommand.parseAsRoot(arguments) }
    }

    @Test func slotsTakeAURLAndASlot() throws {
        let list = try #require(
            try DBWatchCommand.parseAsRoot(["slots", "list", "postgres://u@h/db", "--json"]) as? ListSlotsCommand)
        #expect(list.url == "postgres://u@h/db" && list.json)
        let drop = try #require(
            try DBWatchCommand.parseAsRoot(["slots", "drop", "postgres://u@h/db", "dbwatch_node1"])
                as? DropSlotCommand)
        #expect(drop.slot == "dbwatch_node1")
    }

    @Test func slotsPrintAsATableAndAsJSON() throws {
        let slots = [
            ReplicationSlot(
                name: "dbwatch_a", database: "shop", isActive: true, activePID: 4242,
                restartPosition: LogSequenceNumber("0/16B3748"), confirmedPosition: LogSequenceNumber("0/16B3780"),
                retainedBytes: 3 * 1024 * 1024, walStatus: "reserved"),
            ReplicationSlot(name: "dbwatch_b", database: "shop", isActive: false),
        ]
        #expect(
            ListSlotsCommand.table(slots) == """
                NAME       DATABASE  ACTIVE          RESTART LSN  CONFIRMED LSN  WAL HELD  WAL STATUS
                dbwatch_a  shop      yes (pid 4242)  0/16B3748    0/16B3780      3.0 MB    reserved
                dbwatch_b  shop      no              -            -              -         -

                """)
        #expect(ListSlotsCommand.table([]) == "No replication slot of a DBWatch replica.\n")
        let json = ListSlotsCommand.json(slots)
        #expect(json.contains(#""activePID" : 4242"#))
        #expect(json.contains(#""restartLSN" : "0/16B3748""#))
        #expect(json.contains(#""retainedBytes" : 3145728"#))
        #expect(json.contains(#""walStatus" : null"#))
        #expect(ListSlotsCommand.json([]) == "[\n\n]\n" || ListSlotsCommand.json([]) == "[]\n")
        #expect(ListSlotsCommand.byteCount(512) == "512 B")
        #expect(ListSlotsCommand.byteCount(1536) == "1.5 kB")
    }

    @Test func statusLinesSayPhasesRetriesAndReconnections() {
        typealias Snapshot = ReplicaStatusLines.Snapshot
        let idle = Snapshot()
        #expect(ReplicaStatusLines.lines(from: idle, to: Snapshot(phase: .starting)) == ["dbwatch: replica starting"])
        let streaming = Snapshot(
            phase: .streaming, isConnected: true, slotName: "dbwatch_n1", appliedPosition: LogSequenceNumber("0/10"))
        #expect(
            ReplicaStatusLines.lines(from: Snapshot(phase: .copying), to: streaming) == [
                "dbwatch: replica streaming from slot dbwatch_n1 at 0/10"
            ])
        // Nothing new, nothing printed (positions move all the time).
        var moved = streaming
        moved.appliedPosition = LogSequenceNumber("0/20")
        #expect(ReplicaStatusLines.lines(from: streaming, to: moved).isEmpty)
        var lost = streaming
        lost.isConnected = false
        lost.lastError = ReplicaError(.sourceUnreachable, "connection refused")
        #expect(
            ReplicaStatusLines.lines(from: streaming, to: lost) == [
                "dbwatch: replica error, retrying: connection refused"
            ])
        #expect(ReplicaStatusLines.lines(from: lost, to: lost).isEmpty)
        var back = lost
        back.isConnected = true
        back.lastError = nil
        #expect(ReplicaStatusLines.lines(from: lost, to: back) == ["dbwatch: replica connected again"])
        // A fatal error is the command's last message, not a status line.
        let failed = Snapshot(phase: .failed, lastError: ReplicaError(.schemaChanged, "ALTER TABLE player"))
        #expect(ReplicaStatusLines.lines(from: streaming, to: failed).isEmpty)
        #expect(ReplicaStatusLines.lines(from: streaming, to: Snapshot(phase: .stopped)).isEmpty)
        #expect(
            ReplicaStatusLines.stopped(Snapshot(phase: .stopped, slotName: "dbwatch_n1"))
                == "dbwatch: replica stopped; its slot dbwatch_n1 is kept for the next run")
    }

    @Test func replicaAndSlotErrorsHaveTheirExitStatus() {
        #expect(ExitStatus(classifying: ReplicaError(.schemaChanged, "x")) == .postgres)
        #expect(ExitStatus(classifying: ReplicaError(.slotMissing, "x")) == .postgres)
        #expect(ExitStatus(classifying: ReplicaError(.invalidConfiguration, "x")) == .usage)
        #expect(ExitStatus(classifying: ReplicationSlotError(.notReplicaSlot, "x")) == .usage)
        #expect(ExitStatus(classifying: ReplicationSlotError(.otherDatabase, "x")) == .usage)
        #expect(ExitStatus(classifying: ReplicationSlotError(.slotActive, "x")) == .locked)
        #expect(ExitStatus(classifying: ReplicationSlotError(.slotNotFound, "x")) == .failure)
        #expect(ExitStatus(classifying: ReplicationSlotError(.sourceFailed, "x")) == .postgres)
        #expect(ExitStatus.postgres.rawValue == 76)
    }
}
