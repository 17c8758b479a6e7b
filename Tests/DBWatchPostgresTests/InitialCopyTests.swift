import DBWatch
import DBWatchPostgres
import DBWatchTestSupport
import PostgresNIO
import Testing

@Suite("Replica: the initial copy", RequiredProgram.postgresql.trait)
struct InitialCopyTests {
    @Test("The tables are created in SQLite and their rows copied, NULLs included")
    func rowsAreCopied() async throws {
        try await withReplicaScene(
            schema: """
                CREATE TABLE player (id int PRIMARY KEY, name text, score bigint);
                INSERT INTO player VALUES (1, 'ada', 10), (2, 'bob', NULL), (3, NULL, 30)
                """
        ) { scene in
            let replica = scene.replica(tables: ["player"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                let columns = ["id", "name", "score"]
                #expect(try await scene.replicaRows("player", columns: columns) == "1|ada|10\n2|bob|∅\n3|∅|30")
                #expect(replica.status.phase == .streaming)
                #expect(replica.status.slotName?.hasPrefix("dbwatch_") == true)
            }
        }
    }

    @Test("A large table is copied in several SQLite transactions")
    func largeTableIsCopiedInChunks() async throws {
        try await withReplicaScene(
            schema: """
                CREATE TABLE item (id int PRIMARY KEY, label text);
                INSERT INTO item SELECT g, 'item ' || g FROM generate_series(1, 12345) g
                """
        ) { scene in
            let replica = scene.replica(tables: ["item"]) { $0.rowsPerCopyTransaction = 1000 }
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                let count = try await scene.pool.read { db in
                    try db.fetchOne(Int.self, sql: "SELECT count(*) FROM item")
                }
                #expect(count == 12345)
                #expect(
                    try await scene.replicaRows("item", columns: ["id", "label"])
                        == scene.sourceRows("item", columns: ["id", "label"]))
            }
        }
    }

    @Test("Writes committed while the copy runs are neither lost nor applied twice")
    func writesDuringTheCopyAreKeptOnce() async throws {
        try await withReplicaScene(
            schema: """
                CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL);
                INSERT INTO counter SELECT g, 0 FROM generate_series(1, 20000) g
                """
        ) { scene in
            let replica = scene.replica(tables: ["counter"]) { $0.rowsPerCopyTransaction = 500 }
            // A writer that increments rows and moves keys while the replica
            // starts, copies and streams.
            let writer = Task {
                for round in 0..<150 {
                    try await scene.client.query(
                        """
                        UPDATE counter SET n = n + 1 WHERE id % 150 = \(round);
                        """)
                    try await scene.client.query(
                        "UPDATE counter SET id = id + 100000 WHERE id = \(round + 1)")
                    try await scene.client.query("DELETE FROM counter WHERE id = \(20000 - round)")
                    try await scene.client.query("INSERT INTO counter VALUES (\(200000 + round), \(round))")
                }
            }
            try await withRunningReplica(replica) { _ in
                try await writer.value
                try await replica.catchUp(with: scene.client)
                #expect(
                    try await scene.replicaRows("counter", columns: ["id", "n"])
                        == scene.sourceRows("counter", columns: ["id", "n"]))
            }
        }
    }

    @Test("Key changes committed while the copy starts are neither lost nor applied twice")
    func keyChangesDuringTheCopyAreKeptOnce() async throws {
        try await withReplicaScene(
            schema: """
                CREATE TABLE shift (id int PRIMARY KEY, label text NOT NULL);
                INSERT INTO shift SELECT g, 'row ' || g FROM generate_series(1, 5) g
                """
        ) { scene in
            // Each transaction moves every row to the next key, the highest
            // first: the key a row leaves is the one the row below takes.
            // Replayed over a copy that already holds its result, the same
            // keys name other rows.
            let shiftAll = """
                DO $$ DECLARE r record; BEGIN
                FOR r IN SELECT id FROM shift ORDER BY id DESC LOOP
                    UPDATE shift SET id = id + 1 WHERE id = r.id;
                END LOOP; END $$
                """
            for round in 0..<6 {
                let pool = try DatabasePool(path: scene.directory.file("round-\(round).sqlite"))
                let stop = Protected(false)
                let writer = Task {
                    while !stop.withLock({ $0 }) {
                        try await scene.client.query(PostgresQuery(unsafeSQL: shiftAll))
                    }
                }
                let configuration = PostgresReplica.Configuration(tables: ["shift"])
                let replica = PostgresReplica(
                    client: scene.client, server: scene.server.replicaServer(), database: pool,
                    configuration: configuration, logger: quietLogger)
                do {
                    try await withRunningReplica(replica) { _ in
                        try await waitUntil { replica.status.phase == .streaming || replica.status.phase == .failed }
                        stop.withLock { $0 = true }
                        try await writer.value
                        try await replica.catchUp(with: scene.client)
                        #expect(
                            try await TableDump.sqlite(pool, table: "shift", columns: ["id", "label"])
                                == scene.sourceRows("shift", columns: ["id", "label"]), "round \(round)")
                    }
                } catch {
                    stop.withLock { $0 = true }
                    _ = try? await writer.value
                    await pool.close()
                    throw error
                }
                await pool.close()
            }
        }
    }
}
