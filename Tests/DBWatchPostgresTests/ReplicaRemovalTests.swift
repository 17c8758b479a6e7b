import DBWatch
import DBWatchPostgres
import DBWatchTestSupport
import Testing

@Suite("Replica: removal", RequiredProgram.postgresql.trait)
struct ReplicaRemovalTests {
    @Test("A running replica's slot is listed in use and cannot be dropped; once it stopped, it can")
    func aRunningReplicasSlotIsInUse() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY)") { scene in
            let replica = scene.replica(tables: ["player"])
            let slots = ReplicationSlots(client: scene.client)
            let slot = try await withRunningReplica(replica) { running in
                try await replica.catchUp(with: scene.client)
                let slot = try #require(replica.status.slotName)
                #expect(try await slots.list().first { $0.name == slot }?.isActive == true)
                let error = await #expect(throws: ReplicationSlotError.self) { try await slots.drop(slot) }
                #expect(error?.code == .slotActive)
                try await running.stop()
                return slot
            }
            // The replica closed its connection; PostgreSQL ends the session
            // a moment later, and announces nothing: polled, bounded.
            var dropped = false
            for _ in 0..<500 where !dropped {
                do {
                    try await slots.drop(slot)
                    dropped = true
                } catch let error as ReplicationSlotError where error.code == .slotActive {
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            #expect(dropped)
            #expect(try await scene.slotNames().isEmpty)
        }
    }

    @Test("A removed replica drops its slot and its publication; a running one refuses")
    func removalDropsTheSlot() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY)") { scene in
            let replica = scene.replica(tables: ["player"])
            try await withRunningReplica(replica) { running in
                try await replica.catchUp(with: scene.client)
                let error = await #expect(throws: ReplicaError.self) { try await replica.remove() }
                #expect(error?.code == .stillRunning)
                try await running.stop()
            }
            #expect(try await scene.slotNames().count == 1)
            try await replica.remove()
            #expect(try await scene.slotNames().isEmpty)
            #expect(try await scene.server.psql("SELECT count(*) FROM pg_publication") == "0")
        }
    }

    @Test("A removed replica's file can be run again: it copies again, with a new slot")
    func aRemovedReplicaCanRunAgain() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY, score int)") { scene in
            let first = scene.replica(tables: ["player"])
            try await withRunningReplica(first) { running in
                try await scene.server.run("INSERT INTO player VALUES (1, 1)")
                try await first.catchUp(with: scene.client)
                try await running.stop()
            }
            try await first.remove()
            #expect(try await scene.replicaRows("player", columns: ["id", "score"]) == "1|1")
            try await scene.server.run("INSERT INTO player VALUES (2, 2)", "UPDATE player SET score = 10 WHERE id = 1")
            let second = scene.replica(tables: ["player"])
            try await withRunningReplica(second) { _ in
                try await second.catchUp(with: scene.client)
                #expect(try await scene.replicaRows("player", columns: ["id", "score"]) == "1|10\n2|2")
            }
            #expect(try await scene.slotNames().count == 1)
        }
    }

    @Test("A first run refuses a file that already has a table of the same name, and leaves it as it was")
    func anExistingTableIsNotReplaced() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY, score int)") { scene in
            try await scene.pool.write { db in
                try db.execute(sql: "CREATE TABLE player (name TEXT)")
                try db.execute(sql: "INSERT INTO player VALUES ('mine')")
            }
            let error = try await withRunningReplica(scene.replica(tables: ["player"])) { try await $0.failure() }
            #expect(error?.code == .invalidConfiguration, "\(String(describing: error))")
            #expect(try await scene.replicaRows("player", columns: ["name"], key: "name") == "mine")
            #expect(try await scene.slotNames().isEmpty)
        }
    }
}
