import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `dbwatch replicate` against a real PostgreSQL: the built binary.
@Suite("dbwatch replicate: end to end")
struct ReplicateEndToEndTests {
    @Test func aRowInsertedInPostgresAppearsInTheFileAndSIGTERMExits0() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                try await server.psql(
                    """
                    CREATE TABLE player (id int PRIMARY KEY, name text NOT NULL);
                    INSERT INTO player VALUES (1, 'Arthur');
                    """)
                try await withTemporaryDirectory { directory in
                    let path = directory.file("replica.sqlite")
                    let run = try DBWatchRun.start([
                        "replicate", server.connectionURL + "?sslmode=disable", path, "--table", "player",
                        "--poll-interval-ms", "5",
                    ])
                    defer { run.kill() }
                    _ = try await run.wait(forError: "dbwatch: replica streaming")
                    #expect(try await Self.names(in: path) == ["Arthur"])
                    try await server.psql("INSERT INTO player VALUES (2, 'Barbara')")
                    while try await Self.names(in: path) != ["Arthur", "Barbara"] {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    run.send(SIGTERM)
                    let end = try await run.waitForExit()
                    #expect(end.exitStatus == 0, "\(end)")
                    // The slot is kept for the next run, and the status lines name it.
                    let slot = try await server.psql(
                        "SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'dbwatch\\_%'")
                    #expect(slot.hasPrefix("dbwatch_"))
                    let lines = end.stderr.split(separator: "\n").map(String.init)
                    #expect(
                        lines.first
                            == "dbwatch: replicating player from postgres://postgres@127.0.0.1:\(server.port)/postgres into \(path)",
                        "\(end)")
                    #expect(
                        lines.contains { $0.hasPrefix("dbwatch: replica streaming from slot \(slot) at ") }, "\(end)")
                    #expect(
                        lines.last == "dbwatch: replica stopped; its slot \(slot) is kept for the next run", "\(end)")
                }
            }
        }
    }

    @Test func aSchemaChangeStopsTheReplicaWithExit76() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                try await server.psql("CREATE TABLE player (id int PRIMARY KEY, name text NOT NULL)")
                try await withTemporaryDirectory { directory in
                    let path = directory.file("replica.sqlite")
                    let run = try DBWatchRun.start([
                        "replicate", server.connectionURL + "?sslmode=disable", path, "--table", "player",
                    ])
                    defer { run.kill() }
                    _ = try await run.wait(forError: "dbwatch: replica streaming")
                    try await server.psql(
                        "ALTER TABLE player ADD COLUMN score int; INSERT INTO player VALUES (1, 'Arthur', 10);")
                    let end = try await run.waitForExit()
                    #expect(end.exitStatus == 76, "\(end)")
                    #expect(end.stderr.contains("dbwatch: replica schemaChanged"), "\(end)")
                }
            }
        }
    }

    /// The names of the replica's `player` rows, by id, read-only.
    static func names(in path: String) async throws -> [String] {
        var configuration = Configuration()
        configuration.readOnly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        do {
            let names = try await queue.read { db in
                try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY id")
            }
            await queue.close()
            return names
        } catch {
            await queue.close()
            throw error
        }
    }
}
