import AsyncHTTPClient
import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Testing

/// Server-sent events to many clients of one Hummingbird server (what every
/// adapter does with a stream is `DBWatchAdapterTests.ServerSentEventsTests`).
@Suite("Hummingbird: server-sent events shared by a hundred clients and a LiveQuery")
struct ServerSentEventsTests {
    /// A hundred clients of one request share one observation: a change is
    /// fetched once and reaches each with the same id; once they leave,
    /// nothing remains subscribed.
    @Test func oneFetchPerChangeReachesAHundredClients() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 200
        let httpClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let clients = 100
        // AsyncHTTPClient requires a shutdown before its client goes away.
        do {
            try await fanOut(to: clients, httpClient: httpClient)
        } catch {
            try? await httpClient.shutdown()
            throw error
        }
        try await httpClient.shutdown()
    }

    /// A `LiveQuery` in the server's background and the stream clients of
    /// the same request subscribe to one observation of the core: a change
    /// is fetched once for both (the delivery layer adds clients, not a
    /// second observation).
    @Test func aLiveQueryAndTheClientsOfItsRequestShareOneObservation() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let leaderboard = LiveQuery(TopPlayers(), in: server.database)
                let background = Task { await leaderboard.run() }
                defer { background.cancel() }
                var values = leaderboard.values.makeAsyncIterator()
                #expect(await values.next()?.map(\.name) == ["arthur", "barbara"])
                let stream = try await EventStream.open("\(server.baseURL)/top/events")
                _ = try await stream.nextEvent()
                #expect(server.database.observationCount == 1)
                #expect(server.database.subscriberCount == 2)

                _ = try await fetch("\(server.baseURL)/players/carol/90", method: "POST")
                #expect(await values.next()?.map(\.name) == ["arthur", "carol", "barbara"])
                #expect(try await stream.nextEvent().data?.contains("carol") == true)
                #expect(server.database.observationCount == 1)
            }
        }
    }

    private func fanOut(to clients: Int, httpClient: HTTPClient) async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let url = "\(server.baseURL)/top/events"
                let (firsts, firstContinuation) = AsyncStream.makeStream(of: Void.self)
                let (ids, idContinuation) = AsyncStream.makeStream(of: String?.self)
                let readers = (0..<clients).map { _ in
                    Task {
                        let stream = try await EventStream.open(url, client: httpClient)
                        _ = try await stream.nextEvent()
                        firstContinuation.yield()
                        idContinuation.yield(try await stream.nextEvent().id)
                        while try await stream.next() != nil {}
                    }
                }
                var firstIterator = firsts.makeAsyncIterator()
                for _ in 0..<clients { await firstIterator.next() }
                #expect(server.live.statistics.clientsConnected == clients)
                #expect(server.live.statistics.observations == 1)
                let fetchesBefore = server.live.statistics.fetches

                _ = try await fetch("\(server.baseURL)/players/carol/90", method: "POST")
                var received: Set<String?> = []
                var idIterator = ids.makeAsyncIterator()
                for _ in 0..<clients { received.insert(await idIterator.next() ?? nil) }
                #expect(received.count == 1)
                #expect(received.first != nil)
                #expect(server.live.statistics.fetches == fetchesBefore + 1)

                #expect(server.database.subscriberCount == 1)

                for reader in readers { reader.cancel() }
                try await waitUntil {
                    server.live.statistics.clientsConnected == 0 && server.database.observationCount == 0
                        && server.database.subscriberCount == 0
                }
            }
        }
    }
}
