import DBWatch
import DBWatchPostgres
import DBWatchTestSupport
import PostgresNIO
import Testing

/// A replica's commits are published at the log positions it stores, so
/// that positioned results (and the sync protocol's positions) are the
/// source's; a reopened file starts at its stored position.
@Suite("Replica: commit positions are log positions", RequiredProgram.postgresql.trait)
struct ReplicaCommitPositionTests {
    @Test func eachCommitIsPublishedAtTheLogPositionItStores() async throws {
        try await withTimeout {
            try await withReplicaScene(schema: "CREATE TABLE note (id int PRIMARY KEY)") { scene in
                let replica = scene.replica(tables: ["note"])
                var stored: UInt64 = 0
                try await withRunningReplica(replica) { _ in
                    try await replica.catchUp(with: scene.client)
                    try await waitUntil { replica.status.positionEpoch != nil }
                    var iterator = scene.pool.observe(NoteCount()).positioned.makeAsyncIterator()
                    _ = await iterator.next()
                    for id in 1...3 {
                        try await scene.server.run("INSERT INTO note VALUES (\(id))")
                        var element = try #require(await iterator.next())
                        while (try? element.result?.get()) != id {
                            element = try #require(await iterator.next())
                        }
                        stored = try await Self.storedPosition(scene.pool)
                        #expect(element.position == stored, "the position the file stores with the commit")
                        #expect(scene.pool.commitPosition == stored)
                    }
                }
                // Reopened: the file's position is where its commits start.
                let reopened = try DatabasePool(path: scene.directory.file("replica.sqlite"))
                do {
                    let again = PostgresReplica(
                        client: scene.client, server: scene.server.replicaServer(), database: reopened,
                        configuration: .init(tables: ["note"]), logger: quietLogger)
                    try await withRunningReplica(again) { _ in
                        try await waitUntil { again.status.positionEpoch != nil }
                        #expect(again.status.positionEpoch == replica.status.positionEpoch)
                        #expect(reopened.commitPosition >= stored)
                        try await scene.server.run("INSERT INTO note VALUES (4)")
                        try await again.catchUp(with: scene.client)
                        #expect(reopened.commitPosition == (try await Self.storedPosition(reopened)))
                    }
                } catch {
                    await reopened.close()
                    throw error
                }
                await reopened.close()
            }
        }
    }

    static func storedPosition(_ database: any DatabaseWriter) async throws -> UInt64 {
        try await database.read { db in
            UInt64(bitPattern: try db.fetchOne(Int64.self, sql: "SELECT position FROM dbwatch_replica") ?? 0)
        }
    }
}

/// How many notes there are.
struct NoteCount: Queryable {
    static var defaultValue: Int { 0 }
    func fetch(_ db: Database) throws -> Int {
        try db.fetchOne(Int.self, sql: "SELECT count(*) FROM note") ?? 0
    }
}
