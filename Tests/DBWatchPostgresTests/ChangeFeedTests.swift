import DBWatch
import DBWatchPostgres
import DBWatchTestSupport
import PostgresNIO
import Testing

@Suite("Replica: the change feed", RequiredProgram.postgresql.trait)
struct ChangeFeedTests {
    static let schema = """
        CREATE TABLE player (id int PRIMARY KEY, name text, score int);
        CREATE TABLE team (code text PRIMARY KEY, title text)
        """

    @Test("Inserts, updates, deletes and truncates in many transactions reach the replica")
    func everyKindOfChangeIsApplied() async throws {
        try await withReplicaScene(schema: Self.schema) { scene in
            let replica = scene.replica(tables: ["player", "team"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                try await scene.server.run(
                    "INSERT INTO player VALUES (1, 'ada', 10), (2, 'bob', 20), (3, 'cy', 30)",
                    "INSERT INTO team VALUES ('r', 'red'), ('b', 'blue')",
                    "UPDATE player SET score = score + 1 WHERE id <= 2",
                    "DELETE FROM player WHERE id = 3",
                    "UPDATE player SET id = 7 WHERE id = 1",
                    "BEGIN; INSERT INTO player VALUES (4, 'dee', NULL); UPDATE team SET title = 'RED' WHERE code = 'r'; COMMIT"
                )
                try await replica.catchUp(with: scene.client)
                #expect(
                    try await scene.replicaRows("player", columns: ["id", "name", "score"])
                        == "2|bob|21\n4|dee|∅\n7|ada|11")
                #expect(
                    try await scene.replicaRows("team", columns: ["code", "title"], key: "code") == "b|blue\nr|RED")
                try await scene.server.run("TRUNCATE player", "INSERT INTO player VALUES (9, 'eve', 1)")
                try await replica.catchUp(with: scene.client)
                #expect(try await scene.replicaRows("player", columns: ["id", "name", "score"]) == "9|eve|1")
                #expect(
                    try await scene.replicaRows("team", columns: ["code", "title"], key: "code") == "b|blue\nr|RED")
            }
        }
    }

    @Test("After a random workload with a fixed seed, the replica equals the source table by table")
    func randomWorkloadEndsEqual() async throws {
        try await withReplicaScene(schema: Self.schema) { scene in
            let replica = scene.replica(tables: ["player", "team"])
            try await withRunningReplica(replica) { _ in
                var random = SeededGenerator(seed: 19)
                for _ in 0..<200 {
                    var statements: [String] = []
                    for _ in 0..<Int.random(in: 1...4, using: &random) {
                        let id = Int.random(in: 1...40, using: &random)
                        let code = "t\(Int.random(in: 1...8, using: &random))"
                        switch Int.random(in: 0..<7, using: &random) {
                        case 0, 1:
                            statements.append(
                                "INSERT INTO player VALUES (\(id), 'p\(id)', \(Int.random(in: 0...99, using: &random))) ON CONFLICT (id) DO UPDATE SET score = excluded.score"
                            )
                        case 2:
                            statements.append(
                                "UPDATE player SET score = score + 1, name = name || 'x' WHERE id = \(id)")
                        case 3: statements.append("DELETE FROM player WHERE id = \(id)")
                        case 4:
                            statements.append(
                                "UPDATE player SET id = \(id + 40) WHERE id = \(id) AND NOT EXISTS (SELECT 1 FROM player WHERE id = \(id + 40))"
                            )
                        case 5:
                            statements.append(
                                "INSERT INTO team VALUES ('\(code)', 'x') ON CONFLICT (code) DO UPDATE SET title = team.title || 'y'"
                            )
                        default:
                            statements.append(
                                Bool.random(using: &random)
                                    ? "DELETE FROM team WHERE code = '\(code)'"
                                    : "UPDATE team SET title = NULL WHERE code = '\(code)'")
                        }
                    }
                    try await scene.server.run("BEGIN; " + statements.joined(separator: "; ") + "; COMMIT")
                }
                try await replica.catchUp(with: scene.client)
                #expect(
                    try await scene.replicaRows("player", columns: ["id", "name", "score"])
                        == scene.sourceRows("player", columns: ["id", "name", "score"]))
                #expect(
                    try await scene.replicaRows("team", columns: ["code", "title"], key: "code")
                        == scene.sourceRows("team", columns: ["code", "title"], key: "code"))
                #expect(replica.status.appliedTransactions >= 100)
            }
        }
    }

    @Test("A replica stopped and run again goes on where it stopped: nothing lost, nothing twice")
    func aRestartedReplicaResumes() async throws {
        try await withReplicaScene(schema: Self.schema) { scene in
            let first = scene.replica(tables: ["player"])
            try await withRunningReplica(first) { running in
                try await scene.server.run("INSERT INTO player VALUES (1, 'ada', 1)")
                try await first.catchUp(with: scene.client)
                try await running.stop()
            }
            #expect(first.status.phase == .stopped)
            // Changes while no replica runs stay in the slot.
            try await scene.server.run(
                "INSERT INTO player VALUES (2, 'bob', 2)", "UPDATE player SET score = score * 10")
            let second = scene.replica(tables: ["player"])
            try await withRunningReplica(second) { _ in
                try await second.catchUp(with: scene.client)
                #expect(
                    try await scene.replicaRows("player", columns: ["id", "name", "score"]) == "1|ada|10\n2|bob|20")
                #expect(second.status.appliedTransactions == 2)
                #expect(second.status.slotName == first.status.slotName)
            }
            #expect(try await scene.slotNames().count == 1)
        }
    }

    @Test("Tables with uppercase, quoted and schema-qualified names are copied and followed")
    func quotedNamesAreFollowed() async throws {
        try await withReplicaScene(
            schema: """
                CREATE TABLE "Player" (id int PRIMARY KEY, "Score" int);
                CREATE SCHEMA sales;
                CREATE TABLE sales."order list" (id int PRIMARY KEY, total int);
                INSERT INTO "Player" VALUES (1, 1);
                INSERT INTO sales."order list" VALUES (1, 10)
                """
        ) { scene in
            let replica = scene.replica(tables: [#""Player""#, #"sales."order list""#])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                // The replica checks its tables' catalog once a second
                // while idle: let it check them at least once.
                try await Task.sleep(for: .milliseconds(1500))
                try await scene.server.run(
                    #"UPDATE "Player" SET "Score" = 2"#, #"INSERT INTO sales."order list" VALUES (2, 20)"#)
                try await replica.catchUp(with: scene.client)
                #expect(replica.status.phase == .streaming)
                #expect(try await scene.replicaRows(#""Player""#, columns: [#""Score""#]) == "2")
                #expect(try await scene.replicaRows(#""order list""#, columns: ["id", "total"]) == "1|10\n2|20")
            }
        }
    }

    @Test("A table with REPLICA IDENTITY FULL is followed: updates, key changes and deletes")
    func replicaIdentityFullIsFollowed() async throws {
        try await withReplicaScene(
            schema: """
                CREATE TABLE player (id int PRIMARY KEY, name text, score int);
                ALTER TABLE player REPLICA IDENTITY FULL;
                INSERT INTO player VALUES (1, 'ada', 1), (2, 'bob', 2), (3, 'cy', 3)
                """
        ) { scene in
            let replica = scene.replica(tables: ["player"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                try await scene.server.run(
                    "UPDATE player SET score = 10 WHERE id = 1", "UPDATE player SET id = 20 WHERE id = 2",
                    "DELETE FROM player WHERE id = 3", "INSERT INTO player VALUES (4, 'dee', NULL)")
                try await replica.catchUp(with: scene.client)
                #expect(
                    try await scene.replicaRows("player", columns: ["id", "name", "score"])
                        == "1|ada|10\n4|dee|∅\n20|bob|2")
            }
        }
    }

    @Test("Transactions and TRUNCATEs that touch replicated and other tables together apply their replicated part")
    func mixedTransactionsApplyTheirReplicatedPart() async throws {
        try await withReplicaScene(schema: Self.schema + "; CREATE TABLE other (id int PRIMARY KEY)") { scene in
            let replica = scene.replica(tables: ["player", "team"])
            try await withRunningReplica(replica) { _ in
                try await scene.server.run(
                    "BEGIN; INSERT INTO other VALUES (1); INSERT INTO player VALUES (1, 'ada', 1); INSERT INTO other VALUES (2); INSERT INTO team VALUES ('r', 'red'); COMMIT",
                    "INSERT INTO other VALUES (3)")
                try await replica.catchUp(with: scene.client)
                #expect(try await scene.replicaRows("player", columns: ["id"]) == "1")
                #expect(try await scene.replicaRows("team", columns: ["code"], key: "code") == "r")
                try await scene.server.run(
                    "TRUNCATE player, other, team", "INSERT INTO player VALUES (2, 'bob', 2)")
                try await replica.catchUp(with: scene.client)
                #expect(try await scene.replicaRows("player", columns: ["id"]) == "2")
                #expect(try await scene.replicaRows("team", columns: ["code"], key: "code") == "")
            }
        }
    }

    @Test("An update that leaves a large (TOASTed) value unchanged keeps it in the replica")
    func unchangedLargeValuesAreKept() async throws {
        try await withReplicaScene(
            schema: """
                CREATE TABLE doc (id int PRIMARY KEY, body text, hits int);
                ALTER TABLE doc ALTER COLUMN body SET STORAGE EXTERNAL
                """
        ) { scene in
            let replica = scene.replica(tables: ["doc"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                try await scene.server.run(
                    "INSERT INTO doc SELECT g, repeat('large ' || g, 2000), 0 FROM generate_series(1, 3) g",
                    "UPDATE doc SET hits = hits + 1", "UPDATE doc SET id = id + 10, hits = 5 WHERE id = 2")
                try await replica.catchUp(with: scene.client)
                let rows = try await scene.pool.read { db in
                    try db.fetchAll(
                        String.self, sql: "SELECT id || '|' || length(body) || '|' || hits FROM doc ORDER BY id")
                }
                #expect(rows == ["1|14000|1", "3|14000|1", "12|14000|5"])
                let bodies = try await scene.pool.read { db in
                    try db.fetchAll(String.self, sql: "SELECT body FROM doc ORDER BY id")
                }
                #expect(bodies == ["1", "3", "2"].map { String(repeating: "large \($0)", count: 2000) })
            }
        }
    }

    @Test("A replica whose file is ahead of its slot resumes and moves the slot")
    func aFileAheadOfItsSlotResumes() async throws {
        try await withReplicaScene(schema: Self.schema) { scene in
            let first = scene.replica(tables: ["player"])
            try await withRunningReplica(first) { running in
                try await first.catchUp(with: scene.client)
                try await running.stop()
            }
            // A transaction larger than one read, committed in SQLite as the
            // replica commits it, with the slot left behind: as when the
            // connection is lost, or the process killed, between the SQLite
            // commit and the move of the slot.
            try await scene.server.run("INSERT INTO player SELECT g, 'p', g FROM generate_series(1, 100) g")
            let position = try await PostgresReplica.currentPosition(of: scene.client)
            try await scene.pool.write { db in
                for id in 1...100 {
                    try db.execute(sql: "INSERT INTO player VALUES (?, 'p', ?)", arguments: [id, id])
                }
                try db.execute(
                    sql: "UPDATE dbwatch_replica SET position = ?",
                    arguments: [Int64(bitPattern: position.rawValue)])
            }
            let second = scene.replica(tables: ["player"])
            try await withRunningReplica(second) { _ in
                try await scene.server.run("INSERT INTO player VALUES (101, 'q', 0)")
                try await second.catchUp(with: scene.client, seconds: 20)
                #expect(
                    try await scene.replicaRows("player", columns: ["id", "name", "score"])
                        == scene.sourceRows("player", columns: ["id", "name", "score"]))
                #expect(second.status.appliedTransactions == 1)
            }
            let confirmed = try await scene.server.psql(
                "SELECT confirmed_flush_lsn >= '\(position)' FROM pg_replication_slots")
            #expect(confirmed == "t")
        }
    }

    @Test("Two replicas of one source each get every change, with a slot each")
    func twoReplicasOfOneSource() async throws {
        try await withReplicaScene(schema: Self.schema) { scene in
            let other = try DatabasePool(path: scene.directory.file("other.sqlite"))
            let first = scene.replica(tables: ["player"])
            let second = PostgresReplica(
                client: scene.client, server: scene.server.replicaServer(), database: other,
                configuration: .init(tables: ["player"]), logger: quietLogger)
            try await withRunningReplica(first) { _ in
                try await withRunningReplica(second) { _ in
                    for id in 1...20 {
                        try await scene.server.run("INSERT INTO player VALUES (\(id), 'p', \(id))")
                    }
                    try await first.catchUp(with: scene.client)
                    try await second.catchUp(with: scene.client)
                    let source = try await scene.sourceRows("player", columns: ["id", "score"])
                    #expect(try await scene.replicaRows("player", columns: ["id", "score"]) == source)
                    #expect(try await TableDump.sqlite(other, table: "player", columns: ["id", "score"]) == source)
                }
            }
            await other.close()
            #expect(try await scene.slotNames().count == 2)
        }
    }
}
