import DBWatch
import DBWatchPostgres
import DBWatchTestSupport
import PostgresNIO
import Testing

@Suite("Replica: read your writes and precision", RequiredProgram.postgresql.trait)
struct ReadYourWritesTests {
    @Test("After waiting for a commit's position, the replica shows the commit")
    func waitingForThePositionShowsTheWrite() async throws {
        try await withReplicaScene(schema: "CREATE TABLE note (id int PRIMARY KEY, body text)") { scene in
            let replica = scene.replica(tables: ["note"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                for id in 1...20 {
                    try await scene.client.query("INSERT INTO note VALUES (\(id), 'written')")
                    let position = try await PostgresReplica.currentPosition(of: scene.client)
                    try await replica.waitUntilApplied(position, timeout: .seconds(defaultTestTimeout))
                    let body = try await scene.pool.read { db in
                        try db.fetchOne(String.self, sql: "SELECT body FROM note WHERE id = ?", arguments: [id])
                    }
                    #expect(body == "written")
                    #expect(try #require(replica.status.appliedPosition) >= position)
                }
            }
        }
    }

    @Test("A wait for a position the replica does not reach times out with a typed error")
    func aWaitTimesOut() async throws {
        try await withReplicaScene(schema: "CREATE TABLE note (id int PRIMARY KEY)") { scene in
            let replica = scene.replica(tables: ["note"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                let future = LogSequenceNumber(rawValue: UInt64(Int64.max))
                let error = await #expect(throws: ReplicaError.self) {
                    try await replica.waitUntilApplied(future, timeout: .milliseconds(100))
                }
                #expect(error?.code == .timedOut)
            }
        }
    }

    @Test("A wait ends with a typed error when the replica stops first")
    func aWaitEndsWhenTheReplicaStops() async throws {
        try await withReplicaScene(schema: "CREATE TABLE note (id int PRIMARY KEY)") { scene in
            let replica = scene.replica(tables: ["note"])
            try await withRunningReplica(replica) { running in
                try await replica.catchUp(with: scene.client)
                let future = LogSequenceNumber(rawValue: UInt64(Int64.max))
                let wait = Task { try await replica.waitUntilApplied(future, timeout: .seconds(defaultTestTimeout)) }
                try await running.stop()
                let error = await #expect(throws: ReplicaError.self) { try await wait.value }
                #expect(error?.code == .stopped)
            }
        }
    }

    @Test("An update of one row in PostgreSQL wakes only the observation of that row")
    func anUpdateWakesOnlyItsRow() async throws {
        try await withReplicaScene(
            schema: """
                CREATE TABLE player (id int PRIMARY KEY, score int);
                INSERT INTO player VALUES (1, 10), (2, 20)
                """
        ) { scene in
            let replica = scene.replica(tables: ["player"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                let first = ScoreOfPlayer(id: 1)
                let second = ScoreOfPlayer(id: 2)
                let firstValues = Protected<[Int?]>([])
                let secondValues = Protected<[Int?]>([])
                let tasks = [
                    Task {
                        for try await score in scene.pool.observe(first) { firstValues.withLock { $0.append(score) } }
                    },
                    Task {
                        for try await score in scene.pool.observe(second) { secondValues.withLock { $0.append(score) } }
                    },
                ]
                defer { for task in tasks { task.cancel() } }
                try await waitUntil { firstValues.withLock { $0 } == [10] && secondValues.withLock { $0 } == [20] }
                try await scene.server.run("UPDATE player SET score = 11 WHERE id = 1")
                try await waitUntil { firstValues.withLock { $0 } == [10, 11] }
                try await replica.catchUp(with: scene.client)
                #expect(scene.pool.statistics(for: second)?.fetches == 1)
                #expect(scene.pool.statistics(for: first)?.fetches == 2)
                #expect(secondValues.withLock { $0 } == [20])
            }
        }
    }
}

/// One player's score.
struct ScoreOfPlayer: Queryable {
    static var defaultValue: Int? { nil }
    var id: Int
    func fetch(_ db: Database) throws -> Int? {
        try db.fetchOne(Int.self, sql: "SELECT score FROM player WHERE id = ?", arguments: [id])
    }
}
