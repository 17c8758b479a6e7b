import DBWatch
import DBWatchPostgres
import DBWatchTestSupport
import PostgresNIO
import Testing

@Suite("Replica: schema changes and unsupported tables", RequiredProgram.postgresql.trait)
struct SchemaChangeTests {
    static let schema = """
        CREATE TABLE player (id int PRIMARY KEY, name text);
        INSERT INTO player VALUES (1, 'ada')
        """

    @Test("ALTER TABLE followed by a row change stops the replica before that change")
    func anAlterFollowedByAChangeStops() async throws {
        try await withReplicaScene(schema: Self.schema) { scene in
            let replica = scene.replica(tables: ["player"])
            let error = try await withRunningReplica(replica) { running in
                try await replica.catchUp(with: scene.client)
                try await scene.server.run(
                    "INSERT INTO player VALUES (2, 'bob')", "ALTER TABLE player ADD COLUMN score int",
                    "INSERT INTO player VALUES (3, 'cy', 3)")
                return try await running.failure()
            }
            #expect(error?.code == .schemaChanged, "\(String(describing: error))")
            #expect(error?.table == "public.player")
            #expect(replica.status.phase == .failed)
            #expect(replica.status.lastError?.code == .schemaChanged)
            // The rows before the change are there, the row after is not.
            #expect(try await scene.replicaRows("player", columns: ["id", "name"]) == "1|ada\n2|bob")
        }
    }

    @Test("ALTER TABLE with no change after it is found by the catalog check")
    func anAlterAloneStops() async throws {
        try await withReplicaScene(schema: Self.schema) { scene in
            let replica = scene.replica(tables: ["player"])
            let error = try await withRunningReplica(replica) { running in
                try await replica.catchUp(with: scene.client)
                try await scene.server.run("ALTER TABLE player ALTER COLUMN name TYPE varchar(20)")
                return try await running.failure()
            }
            #expect(error?.code == .schemaChanged)
        }
    }

    @Test("DROP TABLE stops the replica with tableDropped, after applying what came before")
    func aDropStops() async throws {
        try await withReplicaScene(schema: Self.schema) { scene in
            let replica = scene.replica(tables: ["player"])
            let error = try await withRunningReplica(replica) { running in
                try await replica.catchUp(with: scene.client)
                try await scene.server.run("INSERT INTO player VALUES (2, 'bob')", "DROP TABLE player")
                return try await running.failure()
            }
            #expect(error?.code == .tableDropped)
            #expect(try await scene.replicaRows("player", columns: ["id", "name"]) == "1|ada\n2|bob")
        }
    }

    @Test("A table changed while the replica was stopped is refused at the next start")
    func aChangeWhileStoppedIsFoundAtStart() async throws {
        try await withReplicaScene(schema: Self.schema) { scene in
            try await withRunningReplica(scene.replica(tables: ["player"])) { running in
                try await running.replica.catchUp(with: scene.client)
                try await running.stop()
            }
            try await scene.server.run("ALTER TABLE player RENAME COLUMN name TO nickname")
            let error = try await withRunningReplica(scene.replica(tables: ["player"])) { try await $0.failure() }
            #expect(error?.code == .schemaChanged)
        }
    }

    @Test(
        "Tables the replica cannot follow are refused before any slot is made",
        arguments: [
            ("CREATE TABLE t (id int PRIMARY KEY, at point)", ReplicaError.Code.unsupportedType),
            ("CREATE TABLE t (id int, name text)", .noPrimaryKey),
            ("CREATE TABLE t (at timestamptz PRIMARY KEY)", .unsupportedType),
            ("CREATE TABLE other (id int PRIMARY KEY)", .tableNotFound),
            ("CREATE VIEW t AS SELECT 1 AS id", .invalidConfiguration),
            (
                "CREATE TABLE t (id int PRIMARY KEY, code int NOT NULL UNIQUE); ALTER TABLE t REPLICA IDENTITY USING INDEX t_code_key",
                .noPrimaryKey
            ),
            ("CREATE TABLE t (id int PRIMARY KEY); ALTER TABLE t REPLICA IDENTITY NOTHING", .noPrimaryKey),
        ])
    func unsupportedTablesAreRefused(schema: String, code: ReplicaError.Code) async throws {
        try await withReplicaScene(schema: schema) { scene in
            let error = try await withRunningReplica(scene.replica(tables: ["t"])) { try await $0.failure() }
            #expect(error?.code == code)
            #expect(try await scene.slotNames().isEmpty)
        }
    }

    @Test(
        "A publication that leaves out updates, deletes or truncates, or filters rows or columns, is refused",
        arguments: [
            "CREATE PUBLICATION p FOR TABLE player WITH (publish = 'insert')",
            "CREATE PUBLICATION p FOR TABLE player WITH (publish = 'insert, update, delete')",
            "CREATE PUBLICATION p FOR TABLE player WHERE (id > 10)",
            "CREATE PUBLICATION p FOR TABLE player (id)",
        ])
    func incompletePublicationsAreRefused(publication: String) async throws {
        try await withReplicaScene(schema: Self.schema + "; " + publication) { scene in
            let replica = scene.replica(tables: []) { $0.publication = "p" }
            let error = try await withRunningReplica(replica) { try await $0.failure() }
            #expect(error?.code == .invalidConfiguration, "\(String(describing: error))")
            #expect(try await scene.slotNames().isEmpty)
        }
    }

    @Test(
        "Tables that would be one SQLite table, or take a name SQLite or the replica uses, are refused",
        arguments: [
            (
                #"CREATE TABLE "Player" (id int PRIMARY KEY); CREATE TABLE player (id int PRIMARY KEY)"#,
                [#""Player""#, "player"]
            ),
            (
                "CREATE SCHEMA a; CREATE TABLE a.player (id int PRIMARY KEY); CREATE TABLE player (id int PRIMARY KEY)",
                ["a.player", "player"]
            ),
            ("CREATE TABLE dbwatch_replica (id int PRIMARY KEY)", ["dbwatch_replica"]),
            ("CREATE TABLE sqlite_things (id int PRIMARY KEY)", ["sqlite_things"]),
        ])
    func collidingNamesAreRefused(schema: String, tables: [String]) async throws {
        try await withReplicaScene(schema: schema) { scene in
            let error = try await withRunningReplica(scene.replica(tables: tables)) { try await $0.failure() }
            #expect(error?.code == .invalidConfiguration, "\(String(describing: error))")
            #expect(try await scene.slotNames().isEmpty)
        }
    }

    @Test("A configuration with no table, or tables and a publication, is refused")
    func badConfigurationsAreRefused() async throws {
        try await withReplicaScene(schema: "") { scene in
            for replica in [
                scene.replica(tables: []),
                scene.replica(tables: ["t"]) { $0.publication = "p" },
            ] {
                let error = try await withRunningReplica(replica) { try await $0.failure() }
                #expect(error?.code == .invalidConfiguration)
            }
        }
    }
}
