import DBWatch
import DBWatchTestSupport
import Foundation
import Logging
import NIOSSL
import PostgresNIO
import Testing

@testable import DBWatchPostgres

/// The replication connection against a real PostgreSQL: authentication as
/// PostgreSQL 15 configures it, TLS, and what PostgreSQL logs.
@Suite("Replication connection: authentication, TLS, the server's log", RequiredProgram.postgresql.trait)
struct ReplicationConnectionTests {
    /// Connects as `user` and returns `SELECT ssl FROM pg_stat_ssl` of the
    /// session (`t` over TLS).
    static func sessionUsesTLS(_ server: PostgresReplica.Server) async throws -> String? {
        try await withTimeout {
            try await ReplicationConnection.withConnection(
                to: server, settings: SourceConnection.sessionSettings, applicationName: "test", logger: quietLogger
            ) { connection in
                let rows = try await connection.simpleQuery(
                    "SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                return rows.first?.first ?? nil
            }
        }
    }

    /// The server as `user`; at `localhost`, the name its certificate
    /// holds, when `byName`.
    static func server(
        _ postgres: PostgresServer, user: PostgresServer.PasswordUser, password: String? = nil,
        tls: PostgresReplica.Server.TLS = .disable, byName: Bool = false
    ) -> PostgresReplica.Server {
        PostgresReplica.Server(
            host: byName ? "localhost" : postgres.host, port: postgres.port, username: user.name,
            password: password ?? user.password,
            database: postgres.database, tls: tls)
    }

    // One server per test: the tests of the suite share a few servers at
    // a time (PostgresServerSlots), and waiting for one counts against
    // every test's timeout.

    @Test(
        "SCRAM-SHA-256, MD5 and trust authenticate; a wrong password is a fatal sourceNotReady; TLS required from a server without TLS is refused, preferred it falls back to plain TCP"
    )
    func authenticationWithoutTLS() async throws {
        try await withPostgresServer { postgres in
            try await postgres.createPasswordUsers()
            for user in [PostgresServer.PasswordUser.scram, .md5] {
                let ssl = try await Self.sessionUsesTLS(Self.server(postgres, user: user))
                #expect(ssl == "false", "\(user.method)")
                let error = await #expect(throws: ReplicaError.self) {
                    _ = try await Self.sessionUsesTLS(Self.server(postgres, user: user, password: "wrong"))
                }
                #expect(error?.code == .sourceNotReady, "\(user.method)")
                #expect(error?.isRetried == false)
            }
            let trusted = try await Self.sessionUsesTLS(postgres.replicaServer())
            #expect(trusted == "false")
            let required = await #expect(throws: ReplicaError.self) {
                _ = try await Self.sessionUsesTLS(
                    PostgresReplica.Server(
                        host: postgres.host, port: postgres.port, username: postgres.username,
                        database: postgres.database, tls: .require(.makeClientConfiguration())))
            }
            #expect(required?.code == .sourceNotReady)
            let preferred = PostgresReplica.Server(
                host: postgres.host, port: postgres.port, username: postgres.username, database: postgres.database,
                tls: .prefer(.makeClientConfiguration()))
            let ssl = try await Self.sessionUsesTLS(preferred)
            #expect(ssl == "false")
        }
    }

    @Test(
        "TLS verified by the test's certificate authority encrypts the session; another name or an untrusted authority is refused; a TLS-only user is refused without TLS",
        RequiredProgram.openssl.trait
    )
    func tls() async throws {
        try await withPostgresServer(tls: true) { postgres in
            try await postgres.createPasswordUsers()
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(postgres.certificateAuthorityFile)
            let server = Self.server(postgres, user: .tls, tls: .require(tls), byName: true)
            #expect(try await Self.sessionUsesTLS(server) == "true")
            let plain = await #expect(throws: ReplicaError.self) {
                _ = try await Self.sessionUsesTLS(Self.server(postgres, user: .tls))
            }
            #expect(plain?.code == .sourceNotReady)
            // The certificate names localhost, not the address.
            let otherName = Self.server(postgres, user: .tls, tls: .require(tls))
            let wrongName = await #expect(throws: ReplicaError.self) { _ = try await Self.sessionUsesTLS(otherName) }
            #expect(wrongName?.code == .sourceNotReady)
            let untrusted = await #expect(throws: ReplicaError.self) {
                _ = try await Self.sessionUsesTLS(
                    Self.server(postgres, user: .tls, tls: .require(.makeClientConfiguration())))
            }
            #expect(untrusted?.code == .sourceNotReady, "\(String(describing: untrusted))")
            var named = Self.server(postgres, user: .tls, tls: .require(tls))
            named.tlsServerName = "localhost"
            #expect(try await Self.sessionUsesTLS(named) == "true")
            // sslmode=require: encrypted, the certificate not verified.
            var unverified = TLSConfiguration.makeClientConfiguration()
            unverified.certificateVerification = .none
            #expect(
                try await Self.sessionUsesTLS(Self.server(postgres, user: .tls, tls: .require(unverified))) == "true")
        }
    }

    @Test("A replica authenticated with SCRAM over verified TLS copies and streams", RequiredProgram.openssl.trait)
    func replicaOverSCRAMAndTLS() async throws {
        try await withPostgresServer(tls: true) { postgres in
            try await postgres.createPasswordUsers()
            try await postgres.psql(
                "CREATE TABLE t (id int PRIMARY KEY, c char(4)); INSERT INTO t VALUES (1, 'a'); ALTER TABLE t OWNER TO tls_user"
            )
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(postgres.certificateAuthorityFile)
            let user = PostgresServer.PasswordUser.tls
            let clientConfiguration = PostgresClient.Configuration(
                host: "localhost", port: postgres.port, username: user.name, password: user.password,
                database: postgres.database, tls: .require(tls))
            let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: quietLogger)
            let running = Task { await client.run() }
            defer { running.cancel() }
            try await withTemporaryDirectory { directory in
                let pool = try DatabasePool(path: directory.file("replica.sqlite"))
                var configuration = PostgresReplica.Configuration(tables: ["t"])
                configuration.queryTimeout = .seconds(5)
                let replica = PostgresReplica(
                    client: client, server: Self.server(postgres, user: user, tls: .require(tls), byName: true),
                    database: pool,
                    configuration: configuration, logger: quietLogger)
                try await withRunningReplica(replica) { _ in
                    try await replica.catchUp(with: client)
                    try await postgres.psql("INSERT INTO t VALUES (2, 'b')")
                    try await replica.catchUp(with: client)
                    let values = try await pool.read { db in
                        try db.fetchAll(String.self, sql: "SELECT c FROM t ORDER BY id")
                    }
                    #expect(values == ["a   ", "b   "])
                }
                await pool.close()
            }
        }
    }

    @Test("PostgreSQL logs a few lines per replica connection, not per transaction streamed")
    func theServerLogDoesNotGrowWithTheFeed() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY, score int)") { scene in
            let replica = scene.replica(tables: ["player"])
            try await withRunningReplica(replica) { _ in
                // The replication connection's decoding session started.
                let file = scene.server.logFile
                try await waitUntil { Self.lines(of: file).contains { $0.contains("starting logical decoding") } }
                try await scene.server.run("INSERT INTO player VALUES (0, 0)")
                try await replica.catchUp(with: scene.client)
                let before = Self.lines(of: scene.server.logFile)
                for round in 1...100 {
                    try await scene.client.query("INSERT INTO player VALUES (\(round), \(round))")
                    if round % 10 == 0 { try await replica.catchUp(with: scene.client) }
                }
                try await replica.catchUp(with: scene.client)
                let added = Self.lines(of: scene.server.logFile).dropFirst(before.count)
                #expect(
                    added.isEmpty,
                    "before:\n\(before.joined(separator: "\n"))\nadded:\n\(added.joined(separator: "\n"))")
                // The slot's creation, and the one decoding session of
                // the one replication connection.
                let decoding = before.filter { $0.contains("logical decoding") }
                #expect(decoding.count <= 3, "\(before.joined(separator: "\n"))")
            }
        }
    }

    static func lines(of file: String) -> [String] {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }
}
