import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Logging
import ServiceLifecycle
import Testing

/// The recipe of the catalog's "Reacting to Changes in the Background": a
/// service of the application's own loops over a `LiveQuery`'s values,
/// listed after the live query's service, itself after `LiveQueries`. On
/// graceful shutdown the loop ends first, then the live query, then
/// `LiveQueries` closes the database.
@Suite("Reacting to changes in a server's background")
struct BackgroundReactionTests {
    /// The article's service: the loop over the values runs in `run()`.
    struct LeaderboardAnnouncer: Service {
        let leaderboard: LiveQuery<TopPlayers>
        let announce: @Sendable ([Player]) async -> Void

        func run() async {
            for await players in leaderboard.values.cancelOnGracefulShutdown() {
                await announce(players)
            }
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func theLoopSeesEachChangeAndShutdownEndsItThenClosesTheDatabase(kind: DatabaseKind) async throws {
        try await withTimeout {
            let database = try await kind.makeDatabase()
            var logger = Logger(label: "BackgroundReactionTests")
            logger.logLevel = .error
            let live = LiveQueries(database, logger: logger)
            let leaderboard = LiveQuery(TopPlayers(), in: database)
            let (announced, continuation) = AsyncStream.makeStream(of: [String].self)
            let announcer = LeaderboardAnnouncer(leaderboard: leaderboard) { continuation.yield($0.map(\.name)) }
            let group = ServiceGroup(
                configuration: .init(services: [live, leaderboard.service, announcer], logger: logger))
            let running = Task { try await group.run() }

            var iterator = announced.makeAsyncIterator()
            #expect(await iterator.next() == ["arthur", "barbara"])
            try await database.write { db in try db.execute(sql: "INSERT INTO player VALUES ('carol', 90)") }
            #expect(await iterator.next() == ["arthur", "carol", "barbara"])

            await group.triggerGracefulShutdown()
            // No service ends out of turn (the group would throw).
            try await running.value
            continuation.finish()
            #expect(await iterator.next() == nil)
            // LiveQueries stopped last and closed the database.
            await #expect(throws: (any Error).self) { try await database.read { _ in 0 } }
        }
    }
}
