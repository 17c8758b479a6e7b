import DBWatch
import DBWatchPostgres
import DBWatchTestSupport
import PostgresNIO
import Testing

@Suite("Replica: shutdown", RequiredProgram.postgresql.trait)
struct ShutdownTests {
    @Test("A replica stopped while PostgreSQL makes it wait returns promptly")
    func aStopWhilePostgreSQLWaitsIsPrompt() async throws {
        try await withReplicaScene(schema: "CREATE TABLE player (id int PRIMARY KEY)") { scene in
            try await scene.client.withConnection { blocker in
                // A transaction in progress: creating a slot waits for it
                // to end.
                try await blocker.query("BEGIN", logger: quietLogger)
                try await blocker.query("INSERT INTO player VALUES (1)", logger: quietLogger)
                let running = RunningReplica(scene.replica(tables: ["player"]))
                try await waitUntilAsync {
                    try await scene.server.psql(
                        """
                        SELECT count(*) FROM pg_stat_activity
                        WHERE query LIKE '%pg_create_logical_replication_slot%' AND wait_event_type = 'Lock'
                        """) == "1"
                }
                running.task.cancel()
                var stopError: (any Error)?
                do {
                    try await withTimeout(seconds: isThreadSanitized ? 30 : 5) { [task = running.task] in
                        try await task.value
                    }
                } catch {
                    stopError = error
                }
                try await blocker.query("ROLLBACK", logger: quietLogger)
                if let stopError { throw stopError }
                #expect(running.replica.status.phase == .stopped)
            }
        }
    }
}
