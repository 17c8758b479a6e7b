#if Hummingbird
    import AsyncHTTPClient
    import DBWatch
    import DBWatchDelivery
    import DBWatchHummingbird
    import DBWatchPostgres
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    import Hummingbird
    import Logging
    import PostgresNIO
    import ServiceLifecycle
    import Testing

    /// Two replicas of one PostgreSQL, each served over the sync protocol
    /// with the replica's epoch: a client that leaves one node at a
    /// position resumes on the other with the changes since, missing
    /// nothing and receiving nothing twice.
    @Suite("Replica: sync positions are the source's", RequiredProgram.postgresql.trait)
    struct ReplicaSyncPositionTests {
        static let schema = """
            CREATE TABLE player (id int PRIMARY KEY, name text NOT NULL UNIQUE, score int NOT NULL);
            INSERT INTO player SELECT i, 'player' || i, i * 10 FROM generate_series(1, 20) AS i
            """

        @Test func aClientMovesFromOneReplicaToAnotherWithoutASnapshot() async throws {
            try await withTimeout {
                try await withPostgresServer { server in
                    try await server.psql(Self.schema)
                    try await withClient(of: server) { client in
                        try await withTemporaryDirectory { directory in
                            let poolA = try DatabasePool(path: directory.file("a.sqlite"))
                            let poolB = try DatabasePool(path: directory.file("b.sqlite"))
                            let replicaA = Self.replica(of: server, client: client, into: poolA)
                            let replicaB = Self.replica(of: server, client: client, into: poolB)
                            do {
                                try await withRunningReplica(replicaA) { _ in
                                    try await withRunningReplica(replicaB) { _ in
                                        try await replicaA.catchUp(with: client)
                                        try await replicaB.catchUp(with: client)
                                        try await waitUntil {
                                            replicaA.status.positionEpoch != nil && replicaB.status.positionEpoch != nil
                                        }
                                        let epoch = try #require(replicaA.status.positionEpoch)
                                        #expect(replicaB.status.positionEpoch == epoch)
                                        #expect(epoch.hasPrefix("pg-"))
                                        try await Self.moveBetweenNodes(
                                            server: server, client: client, replicaB: replicaB, poolB: poolB,
                                            epoch: epoch,
                                            nodes: (poolA, poolB))
                                    }
                                }
                            } catch {
                                await poolA.close()
                                await poolB.close()
                                throw error
                            }
                            await poolA.close()
                            await poolB.close()
                        }
                    }
                }
            }
        }

        private static func moveBetweenNodes(
            server: PostgresServer, client: PostgresClient, replicaB: PostgresReplica, poolB: DatabasePool,
            epoch: String, nodes: (DatabasePool, DatabasePool)
        ) async throws {
            try await withSyncNode(nodes.0, epoch: epoch) { nodeA in
                try await withSyncNode(nodes.1, epoch: epoch) { nodeB in
                    // Node B keeps the query observed: its history reaches back.
                    let watcher = try await SyncTestClient.connect(nodeB)
                    try await watcher.subscribe("top", to: "top")
                    var watched = SyncResults()
                    try watched.apply(try await watcher.next())

                    let leaving = HTTPClient(eventLoopGroupProvider: .singleton)
                    let mover = try await SyncTestClient.connect(nodeA, client: leaving)
                    #expect(mover.helloPosition.hasPrefix(epoch + "/"))
                    try await mover.subscribe("top", to: "top")
                    var results = SyncResults()
                    try results.apply(try await mover.next())

                    // One commit in PostgreSQL: both nodes publish it at its log position.
                    try await server.run("UPDATE player SET score = 1000 WHERE id = 1")
                    let onA = try await mover.next()
                    try results.apply(onA)
                    let onB = try await watcher.next()
                    try watched.apply(onB)
                    #expect(onA.position == onB.position, "one source transaction, one position on both nodes")
                    let position = try #require(onA.position)
                    try await leaving.shutdown()

                    // More commits while the client is away; node B applies them.
                    try await server.run(
                        "INSERT INTO player VALUES (21, 'newcomer', 555)", "DELETE FROM player WHERE id = 2",
                        "UPDATE player SET score = 5 WHERE id = 20")
                    let end = try await PostgresReplica.currentPosition(of: client)
                    try await replicaB.waitUntilApplied(end, timeout: .seconds(defaultTestTimeout))
                    let fresh = try await poolB.read { db in try Leaderboard(limit: 100).fetch(db) }
                    while try watched.rows("top", as: RankedPlayer.self) != fresh {
                        try watched.apply(try await watcher.next())
                    }

                    // The client resumes on node B from node A's position.
                    let again = try await SyncTestClient.connect(nodeB)
                    try await again.subscribe("top", to: "top", position: position)
                    let resumed = try await again.next()
                    let kind = resumed.changes["top"]?["kind"] as? String
                    #expect(
                        kind == "catchUp" || kind == "changes", "resumed with the changes, not \(kind ?? "nothing")")
                    #expect(resumed.changes["top"]?["reason"] == nil)
                    try results.apply(resumed)
                    #expect(try results.rows("top", as: RankedPlayer.self) == fresh, "nothing missed, nothing twice")
                    let movedFrom = try #require(onA.sequence)
                    #expect(try #require(resumed.sequence) > movedFrom)

                    // A position node B has not applied yet: not trusted, a
                    // snapshot at node B's own position, never a wrong result.
                    let sequence = try #require(resumed.sequence)
                    let ahead = try await SyncTestClient.connect(nodeB)
                    try await ahead.subscribe("top", to: "top", position: "\(epoch)/\(sequence + 1_000_000)")
                    let snapshot = try await ahead.next()
                    #expect(snapshot.changes["top"]?["kind"] as? String == "snapshot")
                    #expect(snapshot.changes["top"]?["reason"] as? String == "resumed")
                    #expect(try #require(snapshot.sequence) <= sequence + 1_000_000)
                    var aheadResults = SyncResults()
                    try aheadResults.apply(snapshot)
                    #expect(try aheadResults.rows("top", as: RankedPlayer.self) == fresh)
                }
            }
        }

        static func replica(of server: PostgresServer, client: PostgresClient, into pool: DatabasePool)
            -> PostgresReplica
        {
            var configuration = PostgresReplica.Configuration(tables: ["player"])
            configuration.initialRetryDelay = .milliseconds(20)
            configuration.maximumRetryDelay = .milliseconds(200)
            configuration.queryTimeout = .seconds(5)
            return PostgresReplica(
                client: client, server: server.replicaServer(), database: pool, configuration: configuration,
                logger: quietLogger)
        }
    }

    /// One node: the sync protocol over `database` with `epoch`, served
    /// by Hummingbird on 127.0.0.1; `body` gets its base URL. The query
    /// `top` is the leaderboard of every player.
    func withSyncNode<T: Sendable>(
        _ database: any DatabaseWriter, epoch: String, _ body: (String) async throws -> T
    ) async throws -> T {
        var configuration = LiveQueriesConfiguration()
        configuration.syncEpoch = epoch
        configuration.closesDatabaseOnShutdown = false
        let live = LiveQueries(database, configuration: configuration, logger: quietLogger)
        let router = Router()
        live.addSyncRoutes(to: router) { subscription, _, _ in
            guard subscription.query == "top" else { throw LiveQueriesError.unknownQuery(subscription.query) }
            return .identifiable(Leaderboard(limit: 100))
        }
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), services: [live],
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            }, logger: quietLogger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: quietLogger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            running.cancel()
            throw EventStream.Failure("the node did not start")
        }
        do {
            let value = try await body("http://127.0.0.1:\(port)")
            await group.triggerGracefulShutdown()
            try await running.value
            return value
        } catch {
            await group.triggerGracefulShutdown()
            try? await running.value
            throw error
        }
    }
#endif
