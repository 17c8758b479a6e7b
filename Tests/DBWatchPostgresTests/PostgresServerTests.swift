import DBWatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The PostgreSQL test server", RequiredProgram.postgresql.trait)
struct PostgresServerTests {
    @Test("A server starts with logical decoding on, on 127.0.0.1 and a port of its own")
    func starts() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                #expect(try await server.psql("SHOW wal_level") == "logical")
                #expect(try await server.psql("SHOW fsync") == "off")
                #expect(try await server.psql("SELECT current_user") == "postgres")
                #expect(server.port > 0)
                #expect(server.connectionURL == "postgres://postgres@127.0.0.1:\(server.port)/postgres")
                let slot = try await server.psql(
                    "SELECT slot_name FROM pg_create_logical_replication_slot('dbwatch_fixture', 'pgoutput')")
                #expect(slot == "dbwatch_fixture")
            }
        }
    }

    @Test("psql prints one line per row, columns separated by |, and throws at the first error")
    func psqlRunsScripts() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                let output = try await server.psql(
                    """
                    CREATE TABLE player (id int PRIMARY KEY, name text);
                    INSERT INTO player VALUES (1, 'Arthur'), (2, 'Barbara');
                    SELECT id, name FROM player ORDER BY id;
                    """)
                #expect(output == "1|Arthur\n2|Barbara")
                await #expect(throws: PostgresServer.Failure.self) {
                    try await server.psql("INSERT INTO player VALUES (3, 'Craig'); SELECT * FROM missing;")
                }
                // Each statement is its own transaction: the insert before the error stays.
                #expect(try await server.psql("SELECT count(*) FROM player") == "3")
            }
        }
    }

    @Test("A restart keeps the data and the port")
    func restartKeepsData() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                try await server.psql("CREATE TABLE player (id int PRIMARY KEY); INSERT INTO player VALUES (1);")
                let (port, firstPID) = (server.port, try #require(server.pid))
                try await server.restart()
                #expect(server.port == port)
                #expect(server.pid != firstPID)
                #expect(!PostgresServer.isAlive(firstPID))
                #expect(try await server.psql("SELECT id FROM player") == "1")
                try await server.stop()
                try await server.start()
                #expect(try await server.psql("SELECT id FROM player") == "1")
            }
        }
    }

    @Test("Stop ends the postmaster, and the scope removes the directory, also when the body throws")
    func stopEndsThePostmaster() async throws {
        struct Expected: Error {}
        try await withTimeout {
            var seen: (pid: pid_t, directory: String)?
            do {
                try await withPostgresServer { server in
                    let pid = try #require(server.pid)
                    #expect(PostgresServer.isAlive(pid))
                    try await server.stop()
                    #expect(!PostgresServer.isAlive(pid))
                    #expect(!server.isRunning)
                    await #expect(throws: PostgresServer.Failure.self) { try await server.psql("SELECT 1") }
                    try await server.start()
                    seen = (try #require(server.pid), server.directory.path)
                    throw Expected()
                }
                Issue.record("the body's error was not rethrown")
            } catch is Expected {}
            let (pid, directory) = try #require(seen)
            #expect(!PostgresServer.isAlive(pid))
            #expect(!FileManager.default.fileExists(atPath: directory))
        }
    }

    @Test("A server left by a killed test process is ended and removed by the next")
    func abandonedServersAreRemoved() async throws {
        try await withTimeout {
            let server = try await PostgresServer.make()
            do {
                try await server.start()
                let postmaster = try #require(server.pid)
                // A process that is gone: exited and reaped.
                let gone = try ChildProcess.start(["/bin/true"])
                _ = try await gone.waitForExit()
                try Data("\(gone.pid)".utf8).write(
                    to: URL(fileURLWithPath: server.directory.file(PostgresServer.ownerFile)))
                try await PostgresServer.removeAbandonedServers()
                #expect(!PostgresServer.isAlive(postmaster))
                #expect(!FileManager.default.fileExists(atPath: server.directory.path))
            } catch {
                try? await server.remove()
                throw error
            }
        }
    }

    @Test("A start whose port another program holds tries again until it is free")
    func startWaitsForItsPort() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                let port = server.port
                try await server.stop()
                let holder = try listen(onPort: port)
                let starting = Task { try await server.start() }
                while !((try? String(contentsOfFile: server.logFile, encoding: .utf8)) ?? "").contains(
                    "Address already in use")
                {
                    try await Task.sleep(for: .milliseconds(10))
                }
                close(holder)
                try await starting.value
                #expect(server.port == port)
                #expect(try await server.psql("SELECT 1") == "1")
            }
        }
    }

    @Test("Two servers run at once, each with its own port and data")
    func twoServersAtOnce() async throws {
        try await withTimeout {
            try await withPostgresServer { first in
                try await withPostgresServer { second in
                    #expect(first.port != second.port)
                    try await first.psql("CREATE TABLE only_first (id int)")
                    #expect(
                        try await first.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'only_first'") == "1")
                    #expect(
                        try await second.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'only_first'") == "0")
                }
            }
        }
    }

    @Test("createDatabase gives a new database each time")
    func createsDatabases() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                let first = try await server.createDatabase()
                let second = try await server.createDatabase()
                #expect(first != second)
                try await server.psql("CREATE TABLE player (id int)", database: first)
                #expect(
                    try await server.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'player'", database: second)
                        == "0")
                #expect(
                    server.connectionURL(database: first) == "postgres://postgres@127.0.0.1:\(server.port)/\(first)")
            }
        }
    }
}

/// A socket listening on 127.0.0.1:`port`, which keeps any other program
/// from listening there until it is closed.
private func listen(onPort port: Int) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let bound = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    guard descriptor >= 0, bound, Glibc.listen(descriptor, 1) == 0 else {
        close(descriptor)
        throw PostgresServer.Failure("cannot listen on port \(port): errno \(errno)")
    }
    return descriptor
}
