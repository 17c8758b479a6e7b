import DBWatch
import Glibc
import DBWatchPostgres
import DBWatchTestSupport
import PostgresNIO
import Testing

@Suite("Replica: PostgreSQL unreachable, restarted, or its slot gone", RequiredProgram.postgresql.trait)
struct SourceFailureTests {
    @Test("A PostgreSQL restart is retried; the replica keeps its rows meanwhile and catches up after")
    func aRestartIsRetried() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY, score int)") { scene in
            let replica = scene.replica(tables: ["player"])
            try await withRunningReplica(replica) { _ in
                try await scene.server.run("INSERT INTO player VALUES (1, 1)")
                try await replica.catchUp(with: scene.client)
                try await scene.server.stop()
                try await waitUntil { !replica.status.isConnected }
                #expect(replica.status.lastError?.code == .sourceUnreachable)
                #expect(replica.status.phase == .streaming)
                // Observations keep serving the last replicated state.
                #expect(try await scene.replicaRows("player", columns: ["id", "score"]) == "1|1")
                try await scene.server.start()
                try await scene.server.run("INSERT INTO player VALUES (2, 2)")
                try await replica.catchUp(with: scene.client)
                #expect(try await scene.replicaRows("player", columns: ["id", "score"]) == "1|1\n2|2")
                try await waitUntil { replica.status.isConnected && replica.status.lastError == nil }
            }
        }
    }

    @Test("A replication connection PostgreSQL stops answering is given up after queryTimeout, and reconnected")
    func anUnansweringStreamIsGivenUp() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY, score int)") { scene in
            let replica = scene.replica(tables: ["player"]) { $0.queryTimeout = .seconds(1) }
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                // The process streaming to the replica, stopped as a machine
                // that vanished would be: no answer, no close.
                let pid = try await scene.stopSlotHolder()
                // Read after the stop: a reconnection of a slow run before it
                // does not count; the stop's comes a query timeout later.
                let reconnects = replica.status.reconnects
                do {
                    // Given up on: "sent nothing", then (retrying) the slot
                    // still held by the stopped process; either may be the
                    // last error when the test looks.
                    try await waitUntil {
                        let status = replica.status
                        return status.reconnects > reconnects && status.lastError?.code == .sourceUnreachable
                    }
                } catch {
                    kill(pid, SIGCONT)
                    throw error
                }
                // Resumed, it notices its client left and frees the slot.
                kill(pid, SIGCONT)
                try await scene.server.run("INSERT INTO player VALUES (1, 1)")
                try await replica.catchUp(with: scene.client)
                #expect(try await scene.replicaRows("player", columns: ["id", "score"]) == "1|1")
            }
        }
    }

    @Test(
        "After PostgreSQL restarts (fast or immediate), the replica streams again within seconds, not its query timeout",
        arguments: ["fast", "immediate"])
    func restartsRecoverAtOnce(mode: String) async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY, score int)") { scene in
            // A long timeout: only noticing the closed connection at once
            // brings the replica back within the bound below.
            let replica = scene.replica(tables: ["player"]) { $0.queryTimeout = .seconds(60) }
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                for round in 1...4 {
                    try await scene.server.run("INSERT INTO player VALUES (\(round), 0)")
                    try await scene.server.stop(modes: [mode])
                    try await scene.server.start()
                    try await scene.server.run("UPDATE player SET score = \(round)")
                    try await replica.catchUp(with: scene.client, seconds: 10)
                }
                #expect(
                    try await scene.replicaRows("player", columns: ["id", "score"])
                        == scene.sourceRows("player", columns: ["id", "score"]))
            }
        }
    }

    @Test("PostgreSQL closing the replica's connection (pg_terminate_backend) is noticed at once")
    func aTerminatedConnectionIsNoticedAtOnce() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY, score int)") { scene in
            let replica = scene.replica(tables: ["player"]) { $0.queryTimeout = .seconds(60) }
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                for round in 1...5 {
                    let pid = try #require(try await scene.walSenderPID())
                    try await scene.server.run("SELECT pg_terminate_backend(\(pid))")
                    try await scene.server.run("INSERT INTO player VALUES (\(round), \(round))")
                    try await replica.catchUp(with: scene.client, seconds: 10)
                }
                #expect(try await scene.replicaRows("player", columns: ["id"]) == "1\n2\n3\n4\n5")
            }
        }
    }

    @Test("A slot dropped while the replica was stopped is a typed error at the next start")
    func aMissingSlotIsRefused() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY)") { scene in
            let slot = try await withRunningReplica(scene.replica(tables: ["player"])) { running in
                try await running.replica.catchUp(with: scene.client)
                try await running.stop()
                return try #require(running.replica.status.slotName)
            }
            try await scene.server.run("SELECT pg_drop_replication_slot('\(slot)')")
            let error = try await withRunningReplica(scene.replica(tables: ["player"])) { try await $0.failure() }
            #expect(error?.code == .slotMissing)
        }
    }
}

extension SourceFailureTests {
    @Test("A slot invalidated by max_slot_wal_keep_size is a typed error at the next start")
    func anInvalidatedSlotIsRefused() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY)") { scene in
            try await withRunningReplica(scene.replica(tables: ["player"])) { running in
                try await running.replica.catchUp(with: scene.client)
                try await running.stop()
            }
            try await scene.server.run("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'", "SELECT pg_reload_conf()")
            for id in 1...4 {
                try await scene.server.run("INSERT INTO player VALUES (\(id))", "SELECT pg_switch_wal()")
            }
            try await scene.server.run("CHECKPOINT")
            #expect(try await scene.server.psql("SELECT wal_status FROM pg_replication_slots") == "lost")
            let error = try await withRunningReplica(scene.replica(tables: ["player"])) { try await $0.failure() }
            #expect(error?.code == .slotMissing)
        }
    }
}

@Suite("Replica: SQLite failures and status", RequiredProgram.postgresql.trait)
struct ReplicaDatabaseFailureTests {
    @Test("A write the SQLite file refuses stops the replica with databaseFailed, keeping what came before")
    func aRefusedWriteStops() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY, score int)") { scene in
            let replica = scene.replica(tables: ["player"])
            let error = try await withRunningReplica(replica) { running in
                try await scene.server.run("INSERT INTO player VALUES (1, 1)")
                try await replica.catchUp(with: scene.client)
                // A trigger of the file's own refuses the next row.
                try await scene.pool.write { db in
                    try db.execute(
                        sql: """
                            CREATE TRIGGER refuse BEFORE INSERT ON player WHEN NEW.id = 2
                            BEGIN SELECT RAISE(ABORT, 'refused by the file'); END
                            """)
                }
                try await scene.server.run("INSERT INTO player VALUES (2, 2)")
                return try await running.failure()
            }
            #expect(error?.code == .databaseFailed)
            #expect(error?.message.contains("refused by the file") == true)
            #expect(try await scene.replicaRows("player", columns: ["id", "score"]) == "1|1")
        }
    }

    @Test("The lag in seconds goes back to 0 once the replica has caught up")
    func lagIsZeroWhenCaughtUp() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY)") { scene in
            let replica = scene.replica(tables: ["player"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                try await scene.server.run("INSERT INTO player VALUES (1)")
                try await replica.catchUp(with: scene.client)
                #expect(replica.status.appliedTransactions == 1)
                try await waitUntil { replica.status.lagSeconds == 0 && replica.status.lagBytes == 0 }
            }
        }
    }
}
