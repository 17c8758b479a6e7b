import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Logging
import ServiceLifecycle
import Testing

@Suite("LiveQuery as a Service")
struct LiveQueryServiceTests {
    @Test(arguments: DatabaseKind.queueAndPool)
    func gracefulShutdownEndsTheLiveQueryAndItsSubscribersPromptly(kind: DatabaseKind) async throws {
        try await withTimeout {
            let database = try await kind.makeDatabase()
            let leaderboard = LiveQuery(TopPlayers(), in: database)
            let group = ServiceGroup(configuration: .init(services: [leaderboard.service], logger: quietLogger()))
            let running = Task { try await group.run() }

            let (values, continuation) = AsyncStream.makeStream(of: [String].self)
            let subscriber = Task {
                for await players in leaderboard.values { continuation.yield(players.map(\.name)) }
                continuation.finish()
            }
            var iterator = values.makeAsyncIterator()
            #expect(await iterator.next() == ["arthur", "barbara"])

            let start = ContinuousClock.now
            await group.triggerGracefulShutdown()
            try await running.value
            // The subscriber's loop ends too: a stream it fed would close.
            await subscriber.value
            #expect(await iterator.next() == nil)
            // About 0.2 s alone; without the shutdown handler it never returns.
            // The bound leaves room for a busy machine (13 s seen at a load of 28
            // on 2 cores, all suites in parallel).
            let elapsed = ContinuousClock.now - start
            #expect(elapsed < .seconds(30), "shutdown took \(elapsed)")
            try await waitUntil { database.observationCount == 0 && database.subscriberCount == 0 }
            await database.close()
        }
    }

    @Test func gracefulShutdownEndsALiveQueryObservingWithoutSubscribers() async throws {
        try await withTimeout {
            let database = try await DatabaseKind.inMemory.makeDatabase()
            let leaderboard = LiveQuery(TopPlayers(), in: database)
            let group = ServiceGroup(configuration: .init(services: [leaderboard.service], logger: quietLogger()))
            let running = Task { try await group.run() }
            // Only the service's run() observes.
            try await waitUntil { database.observationCount == 1 && database.subscriberCount == 1 }

            await group.triggerGracefulShutdown()
            try await running.value
            try await waitUntil { database.observationCount == 0 && database.subscriberCount == 0 }
            await database.close()
        }
    }

    private func quietLogger() -> Logger {
        var logger = Logger(label: "LiveQueryServiceTests")
        logger.logLevel = .error
        return logger
    }
}
