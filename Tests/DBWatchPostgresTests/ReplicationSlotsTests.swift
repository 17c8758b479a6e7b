import DBWatchPostgres
import DBWatchTestSupport
import Foundation
import Logging
import PostgresNIO
import Testing

@Suite("Replication slots, for operators", RequiredProgram.postgresql.trait)
struct ReplicationSlotsTests {
    @Test(
        "Slot names of DBWatch replicas",
        arguments: ["dbwatch_a", "dbwatch_node_1", "dbwatch_" + String(repeating: "x", count: 40)])
    func replicaSlotNames(name: String) {
        #expect(ReplicationSlots.isReplicaSlotName(name))
    }

    @Test(
        "Names of other slots",
        arguments: [
            "dbwatch_", "dbwatch", "debezium", "dbwatch_A", "dbwatch_a-b", "dbwatch_é", "xdbwatch_a",
            "dbwatch_" + String(repeating: "x", count: 41),
        ])
    func otherSlotNames(name: String) {
        #expect(!ReplicationSlots.isReplicaSlotName(name))
    }

    @Test("list gives the logical slots named dbwatch_…, in every database, with what they hold back")
    func listsReplicaSlots() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                let other = try await server.createDatabase()
                try await server.psql(
                    """
                    SELECT pg_create_logical_replication_slot('dbwatch_b', 'pgoutput');
                    SELECT pg_create_logical_replication_slot('dbwatch_a', 'pgoutput');
                    SELECT pg_create_logical_replication_slot('someone_else', 'pgoutput');
                    SELECT pg_create_logical_replication_slot('dbwatch_\(String(repeating: "x", count: 41))', 'pgoutput');
                    SELECT pg_create_physical_replication_slot('dbwatch_physical', true);
                    CREATE TABLE player (id int PRIMARY KEY, name text);
                    INSERT INTO player SELECT n, 'player ' || n FROM generate_series(1, 1000) n;
                    """)
                try await server.psql(
                    "SELECT pg_create_logical_replication_slot('dbwatch_c', 'pgoutput')", database: other)
                try await withClient(of: server) { client in
                    let slots = try await ReplicationSlots(client: client).list()
                    #expect(slots.map(\.name) == ["dbwatch_a", "dbwatch_b", "dbwatch_c"])
                    #expect(slots.map(\.database) == ["postgres", "postgres", other])
                    for slot in slots {
                        #expect(!slot.isActive)
                        #expect(slot.activePID == nil)
                        #expect(slot.walStatus == "reserved")
                        #expect(slot.restartPosition != nil)
                        #expect(slot.confirmedPosition != nil)
                    }
                    let a = try #require(slots.first)
                    let restart = try await server.psql(
                        "SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = 'dbwatch_a'")
                    #expect(a.restartPosition == LogSequenceNumber(restart))
                    // The table and its 1,000 rows were written after the slot was made.
                    #expect(try #require(a.retainedBytes) > 50_000)
                }
            }
        }
    }

    @Test("drop removes the slot and the publication of the same name, nothing else")
    func dropsSlotAndPublication() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                try await server.psql(
                    """
                    CREATE TABLE player (id int PRIMARY KEY);
                    CREATE PUBLICATION dbwatch_a FOR TABLE player;
                    CREATE PUBLICATION dbwatch_b FOR TABLE player;
                    SELECT pg_create_logical_replication_slot('dbwatch_a', 'pgoutput');
                    SELECT pg_create_logical_replication_slot('dbwatch_b', 'pgoutput');
                    SELECT pg_create_logical_replication_slot('dbwatch_no_publication', 'pgoutput');
                    """)
                try await withClient(of: server) { client in
                    let slots = ReplicationSlots(client: client)
                    try await slots.drop("dbwatch_a")
                    try await slots.drop("dbwatch_no_publication")
                    #expect(try await slots.list().map(\.name) == ["dbwatch_b"])
                    #expect(try await server.psql("SELECT pubname FROM pg_publication ORDER BY 1") == "dbwatch_b")
                    #expect(try await server.psql("SELECT slot_name FROM pg_replication_slots") == "dbwatch_b")
                }
            }
        }
    }

    @Test("drop refuses a name that is not a replica's, a missing slot and a slot of another database")
    func dropRefuses() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                let other = try await server.createDatabase()
                try await server.psql(
                    """
                    SELECT pg_create_logical_replication_slot('someone_else', 'pgoutput');
                    CREATE PUBLICATION someone_else FOR ALL TABLES;
                    """)
                try await server.psql(
                    "SELECT pg_create_logical_replication_slot('dbwatch_elsewhere', 'pgoutput')", database: other)
                try await withClient(of: server) { client in
                    let slots = ReplicationSlots(client: client)
                    try await expectError(.notReplicaSlot) { try await slots.drop("someone_else") }
                    try await expectError(.notReplicaSlot) { try await slots.drop("dbwatch_'; DROP TABLE x; --") }
                    try await expectError(.slotNotFound) { try await slots.drop("dbwatch_missing") }
                    try await expectError(.otherDatabase) { try await slots.drop("dbwatch_elsewhere") }
                }
                #expect(
                    try await server.psql("SELECT slot_name FROM pg_replication_slots ORDER BY 1")
                        == "dbwatch_elsewhere\nsomeone_else")
                #expect(try await server.psql("SELECT pubname FROM pg_publication") == "someone_else")
            }
        }
    }

    @Test("drop refuses a slot a session reads, and drops it once the session has ended")
    func dropRefusesActiveSlot() async throws {
        try await withTimeout {
            // pg_recvlogical holds the slot for as long as it runs; it streams over a WAL sender.
            try await withPostgresServer(settings: ["max_wal_senders": "2"]) { server in
                try await server.psql("SELECT pg_create_logical_replication_slot('dbwatch_busy', 'pgoutput')")
                let reader = try ChildProcess.start([
                    server.program("pg_recvlogical"), "-h", server.host, "-p", String(server.port), "-U",
                    server.username, "-d", server.database, "--slot", "dbwatch_busy", "--start", "-o",
                    "proto_version=1", "-o", "publication_names=dbwatch_busy", "-f", "/dev/null",
                ])
                defer { reader.kill() }
                try await withClient(of: server) { client in
                    let slots = ReplicationSlots(client: client)
                    var listed: [ReplicationSlot] = []
                    while !(listed.first?.isActive ?? false) {
                        #expect(reader.isRunning, "\(reader.snapshot)")
                        try await Task.sleep(for: .milliseconds(10))
                        listed = try await slots.list()
                    }
                    #expect(listed.first?.activePID != nil)
                    try await expectError(.slotActive) { try await slots.drop("dbwatch_busy") }
                    reader.send(SIGTERM)
                    _ = try await reader.waitForExit()
                    while try await slots.list().first?.isActive ?? false {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    try await slots.drop("dbwatch_busy")
                    #expect(try await slots.list().isEmpty)
                }
            }
        }
    }

    @Test("A server that cannot be reached is a sourceFailed error")
    func unreachableServer() async throws {
        try await withTimeout {
            // A server stopped: nothing listens on its port any more.
            try await withPostgresServer { server in
                try await server.stop()
                try await withClient(of: server, connectTimeout: .seconds(1)) { client in
                    let slots = ReplicationSlots(client: client, timeout: .seconds(2))
                    try await expectError(.sourceFailed) { _ = try await slots.list() }
                    try await expectError(.sourceFailed) { try await slots.drop("dbwatch_a") }
                }
            }
        }
    }
}

/// Runs `body` with a running client of `server`'s database `postgres`.
private func withClient<T: Sendable>(
    of server: PostgresServer, connectTimeout: Duration = .seconds(10),
    _ body: @Sendable (PostgresClient) async throws -> T
) async throws -> T {
    var configuration = PostgresClient.Configuration(
        host: server.host, port: server.port, username: server.username, password: nil, database: server.database,
        tls: .disable)
    configuration.options.connectTimeout = connectTimeout
    let client = PostgresClient(configuration: configuration)
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            await client.run()
            return nil
        }
        defer { group.cancelAll() }
        return try await body(client)
    }
}

/// Expects `body` to throw a ``ReplicationSlotError`` with `code`.
private func expectError(
    _ code: ReplicationSlotError.Code, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async throws {
    do {
        try await body()
        Issue.record("no error; expected \(code)", sourceLocation: sourceLocation)
    } catch let error as ReplicationSlotError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    }
}
