import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `dbwatch replicate` against a real PostgreSQL: the built binary.
@Suite("dbwatch replicate: end to end", RequiredProgram.postgresql.trait)
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

    @Test func aReplicaKilledMidStreamAndRestartedLosesNothing() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                try await server.psql("CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL)")
                try await withTemporaryDirectory { directory in
                    let path = directory.file("replica.sqlite")
                    let arguments = [
                        "replicate", server.connectionURL + "?sslmode=disable", path, "--table", "counter",
                    ]
                    let first = try DBWatchRun.start(arguments)
                    defer { first.kill() }
                    _ = try await first.wait(forError: "dbwatch: replica streaming")
                    // 3,000 transactions, each its own: inserts and updates of
                    // every row while the replica streams, then deletes of some
                    // and more updates once it is frozen.
                    let streamed =
                        (1...1000).map { "INSERT INTO counter VALUES (\($0), 0);" }
                        + (1...1000).map { "UPDATE counter SET n = n + \($0) WHERE id = \(1001 - $0);" }
                    let whileFrozen =
                        (1...1000).filter { $0 % 3 == 0 }.map { "DELETE FROM counter WHERE id = \($0);" }
                        + (1...1000).filter { $0 % 3 != 0 }.map { "UPDATE counter SET n = n * 2 WHERE id = \($0);" }
                    let writer = Task { [streamed] in try await server.psql(streamed.joined(separator: "\n")) }
                    // Freeze the replica once it has applied some (wherever it
                    // is: between transactions or inside one), let PostgreSQL
                    // commit the rest, and SIGKILL it with changes it has not
                    // applied: a loaded machine cannot let it catch up first.
                    while try await Self.count(in: path, sql: "SELECT count(*) FROM counter") < 200 {
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    first.send(SIGSTOP)
                    try await writer.value
                    _ = try await server.psql(whileFrozen.joined(separator: "\n"))
                    first.send(SIGKILL)
                    let killed = try await first.waitForExit()
                    #expect(killed.exitStatus == 128 + SIGKILL)
                    let rowsAtKill = try await Self.count(in: path, sql: "SELECT count(*) FROM counter")
                    #expect(rowsAtKill >= 200)
                    let second = try DBWatchRun.start(arguments)
                    defer { second.kill() }
                    let expected = try await server.psql(
                        "SELECT count(*) || ' ' || coalesce(sum(n), 0) || ' ' || coalesce(sum(id * n), 0) FROM counter")
                    while try await Self.summary(in: path) != expected {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    #expect(try await server.psql("SELECT count(*) FROM pg_replication_slots") == "1")
                    second.send(SIGTERM)
                    #expect(try await second.waitForExit().exitStatus == 0)
                }
            }
        }
    }

    /// `count sum(n) sum(id * n)` of the replica's `counter`, as psql prints it.
    static func summary(in path: String) async throws -> String {
        let rows = try await Self.count(in: path, sql: "SELECT count(*) FROM counter")
        let sum = try await Self.count(in: path, sql: "SELECT coalesce(sum(n), 0) FROM counter")
        let weighted = try await Self.count(in: path, sql: "SELECT coalesce(sum(id * n), 0) FROM counter")
        return "\(rows) \(sum) \(weighted)"
    }

    /// One integer the replica's file answers, read-only; 0 while its
    /// table does not exist yet.
    static func count(in path: String, sql: String) async throws -> Int {
        var configuration = Configuration()
        configuration.readOnly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        let value = try? await queue.read { db in try db.fetchOne(Int.self, sql: sql) }
        await queue.close()
        return (value ?? nil) ?? 0
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
