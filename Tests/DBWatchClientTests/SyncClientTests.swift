import DBWatch
import DBWatchClient
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// DBWatchClient against the Hummingbird test server over real sockets:
/// values equal to fresh fetches, one batch across a client's sequences,
/// reconnection and resume, errors, cancellation.
@Suite("Swift sync client")
struct SyncClientTests {
    /// Each test's limit: a test takes well under a second, and a hang
    /// fails it even on a busy machine, which stretches a timeout fivefold
    /// (`withTimeout`), before a runner's own limit of a few minutes.
    static let timeout: Double = isThreadSanitized ? defaultTestTimeout : 30

    func leaderboard(_ server: HummingbirdServer, limit: Int = 10) async throws -> [RankedPlayer] {
        try await server.database.read { db in try Leaderboard(limit: limit).fetch(db) }
    }

    func addPlayer(_ server: HummingbirdServer, _ name: String, _ score: Int) async throws {
        try await server.database.write { db in
            try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: [name, score])
        }
    }

    func client(_ url: String, clock: TestClock? = nil) -> SyncClient {
        var configuration = SyncClientConfiguration()
        if let clock {
            configuration.clock = clock
            configuration.reconnectDelay = .seconds(1)...(.seconds(1))
        }
        return SyncClient(baseURL: URL(string: url)!, configuration: configuration)
    }

    /// Runs `body` while the client's reconnection delays pass at once:
    /// each time it sleeps on `clock` (a first time, and again should an
    /// attempt fail, such as a POST on a pooled connection the proxy cut).
    func reconnecting<T>(_ clock: TestClock, _ body: () async throws -> T) async throws -> T {
        let driver = Task {
            while true {
                await clock.waitForSleepers()
                if Task.isCancelled { return }
                clock.advance(by: .seconds(1))
            }
        }
        defer { driver.cancel() }
        return try await body()
    }

    @Test func theFirstValueComesAtOnceThenOneAfterEachCommitEqualToAFreshFetch() async throws {
        try await withTimeout(seconds: Self.timeout) {
            try await HummingbirdServer.with { server in
                let client = client(server.baseURL)
                var top = client.values(of: "top", params: ["n": "3"], as: [RankedPlayer].self).makeAsyncIterator()
                var count = client.values(of: "count", as: Int.self).makeAsyncIterator()
                let firstTop = try await top.next()
                let firstCount = try await count.next()
                #expect(firstTop == (try await leaderboard(server, limit: 3)))
                #expect(firstCount == 2)
                for (index, (name, score)) in [("carol", 90), ("dave", 200), ("erin", 150)].enumerated() {
                    try await addPlayer(server, name, score)
                    let nextTop = try await top.next()
                    let nextCount = try await count.next()
                    #expect(nextTop == (try await leaderboard(server, limit: 3)))
                    #expect(nextCount == 3 + index)
                }
                await client.close()
                let afterClose = try await top.next()
                #expect(afterClose == nil)
            }
        }
    }

    @Test func twoSequencesOfOneClientSeeOneCommitInOneBatch() async throws {
        try await withTimeout(seconds: Self.timeout) {
            try await HummingbirdServer.with { server in
                let client = client(server.baseURL)
                var top = client.changes(of: "top").makeAsyncIterator()
                var count = client.changes(of: "count").makeAsyncIterator()
                let firstTopNext = try await top.next()
                let firstTop = try #require(firstTopNext)
                #expect(firstTop.kind == .snapshot && firstTop.reason == "subscribed")
                #expect(try firstTop.decode([RankedPlayer].self) == (try await leaderboard(server)))
                let firstCount = try await count.next()
                #expect(firstCount?.kind == .value)
                for (index, name) in ["carol", "dave", "erin"].enumerated() {
                    try await addPlayer(server, name, 50 - index)
                    let topUpdateNext = try await top.next()
                    let topUpdate = try #require(topUpdateNext)
                    let countUpdateNext = try await count.next()
                    let countUpdate = try #require(countUpdateNext)
                    #expect(topUpdate.position == countUpdate.position, "one batch for both")
                    #expect(topUpdate.kind == .changes && topUpdate.changes.count == 1)
                    #expect(try topUpdate.decode([RankedPlayer].self) == (try await leaderboard(server)))
                    #expect(try countUpdate.decode(Int.self) == 3 + index)
                }
                await client.close()
            }
        }
    }

    @Test func aDroppedConnectionResumesWithTheChangesItMissed() async throws {
        try await withTimeout(seconds: Self.timeout) {
            try await HummingbirdServer.with { server in
                // Another client keeps the query observed while this one is away.
                let watcher = try await SyncTestClient.connect(server.baseURL)
                try await watcher.subscribe("top", to: "top")
                _ = try await watcher.next()
                try await TCPProxy.with(to: server.port) { proxy in
                    let clock = TestClock()
                    let client = client("http://127.0.0.1:\(proxy.port)/", clock: clock)
                    var top = client.changes(of: "top").makeAsyncIterator()
                    let firstNext = try await top.next()
                    let first = try #require(firstNext)
                    #expect(first.kind == .snapshot)

                    await proxy.dropConnections()
                    await clock.waitForSleepers()  // waiting to reconnect
                    for (name, score) in [("carol", 90), ("dave", 95), ("erin", 5)] {
                        try await addPlayer(server, name, score)
                        _ = try await watcher.next()
                    }
                    try await reconnecting(clock) {
                        let resumedNext = try await top.next()
                        let resumed = try #require(resumedNext)
                        #expect(resumed.kind == .changes && resumed.changes.count == 3, "the three commits it missed")
                        #expect(try resumed.decode([RankedPlayer].self) == (try await leaderboard(server)))
                        #expect(
                            resumed.position.split(separator: "/").first == first.position.split(separator: "/").first)

                        try await addPlayer(server, "frank", 300)
                        let laterNext = try await top.next()
                        let later = try #require(laterNext)
                        #expect(try later.decode([RankedPlayer].self) == (try await leaderboard(server)))
                    }
                    await client.close()
                }
            }
        }
    }

    /// After a reconnection the client subscribes again in one array: in
    /// several when one would exceed the server's 64 KiB limit on a body
    /// (else the server refuses it whole, and no subscription is followed
    /// again); a message that alone exceeds it is its subscription's
    /// refusal, whether it goes alone or after a reconnection.
    @Test func subscriptionsTooLongForOneArraySubscribeAgainInSeveral() async throws {
        try await withTimeout(seconds: Self.timeout) {
            try await HummingbirdServer.with { server in
                try await TCPProxy.with(to: server.port) { proxy in
                    let clock = TestClock()
                    let client = client("http://127.0.0.1:\(proxy.port)/", clock: clock)
                    // Five of about 20 KB each (a parameter the query ignores).
                    var tops = (1...5).map { n in
                        client.values(
                            of: "top", params: ["n": "\(n)", "pad": String(repeating: "x", count: 20_000)],
                            as: [RankedPlayer].self
                        ).makeAsyncIterator()
                    }
                    for index in tops.indices {
                        let first = try await tops[index].next()
                        #expect(first == (try await leaderboard(server, limit: index + 1)))
                    }
                    var huge = client.values(
                        of: "top", params: ["pad": String(repeating: "x", count: 70_000)], as: [RankedPlayer].self
                    ).makeAsyncIterator()
                    do {
                        _ = try await huge.next()
                        Issue.record("a message longer than the server takes is refused")
                    } catch let refusal as SyncClientError {
                        #expect(
                            refusal.kind == .refused && refusal.status == 400 && refusal.reason == "badRequest",
                            "\(refusal)")
                    }

                    await proxy.dropConnections()
                    await clock.waitForSleepers()  // waiting to reconnect
                    // Subscribed while away: with the others, after the reconnection.
                    var hugeAgain = client.values(
                        of: "top", params: ["pad": String(repeating: "y", count: 70_000)], as: [RankedPlayer].self
                    ).makeAsyncIterator()
                    try await reconnecting(clock) {
                        do {
                            _ = try await hugeAgain.next()
                            Issue.record("a message longer than the server takes is refused")
                        } catch let refusal as SyncClientError {
                            #expect(refusal.status == 400 && refusal.reason == "badRequest", "\(refusal)")
                        }
                        try await addPlayer(server, "dave", 500)
                        for index in tops.indices {
                            let next = try await tops[index].next()
                            #expect(next == (try await leaderboard(server, limit: index + 1)))
                            #expect(next?.first?.name == "dave")
                        }
                    }
                    await client.close()
                }
            }
        }
    }

    /// Runs `body` with two servers (the second, another epoch, has one
    /// more player: `zoe`, 1000) and a client of the first through a proxy
    /// that can be turned to the second, its reconnections on a test clock.
    func withTwoServers(
        _ body:
            @escaping @Sendable (
                _ first: HummingbirdServer, _ second: HummingbirdServer, TCPProxy, TestClock, SyncClient
            ) async throws -> Void
    ) async throws {
        try await withTimeout(seconds: Self.timeout) {
            try await HummingbirdServer.with { first in
                try await HummingbirdServer.with { second in
                    try await addPlayer(second, "zoe", 1000)
                    try await TCPProxy.with(to: first.port) { proxy in
                        let clock = TestClock()
                        let client = client("http://127.0.0.1:\(proxy.port)/", clock: clock)
                        try await body(first, second, proxy, clock, client)
                        await client.close()
                    }
                }
            }
        }
    }

    @Test func aRestartedServerSendsASnapshotSaidToBeResumed() async throws {
        // The restarted server: another epoch, another database.
        try await withTwoServers { first, second, proxy, clock, client in
            var top = client.changes(of: "top").makeAsyncIterator()
            let beforeNext = try await top.next()
            let before = try #require(beforeNext)
            #expect(try before.decode([RankedPlayer].self) == (try await leaderboard(first)))

            proxy.retarget(to: second.port)
            await proxy.dropConnections()
            await clock.waitForSleepers()  // waiting to reconnect
            let afterNext = try await reconnecting(clock) { try await top.next() }
            let after = try #require(afterNext)
            #expect(after.kind == .snapshot && after.reason == "resumed")
            #expect(
                after.position.split(separator: "/").first != before.position.split(separator: "/").first)
            #expect(try after.decode([RankedPlayer].self) == (try await leaderboard(second)))
        }
    }

    /// A server that does not know the session while its stream is open
    /// (behind a load balancer, a message reached another node) answers
    /// `unknownSession`: the client opens a new stream, there, and
    /// subscribes every sequence again.
    @Test func anUnknownSessionWhileItsStreamIsOpenOpensANewStream() async throws {
        try await withTwoServers { _, second, proxy, clock, client in
            var count = client.values(of: "count", as: Int.self).makeAsyncIterator()
            let before = try await count.next()
            #expect(before == 2)
            // The stream stays with the first server; the next
            // message reaches the second.
            proxy.retarget(to: second.port)
            await proxy.dropConnections(keepingFirst: 1)
            var top = client.values(of: "top", params: ["n": "3"], as: [RankedPlayer].self)
                .makeAsyncIterator()
            let (after, topValue) = try await reconnecting(clock) {
                (try await count.next(), try await top.next())
            }
            #expect(after == 3, "the second server's count")
            #expect(topValue == (try await leaderboard(second, limit: 3)))
        }
    }

    @Test func errorsAreValuesOfResultsAndThrownByValues() async throws {
        try await withTimeout(seconds: Self.timeout) {
            try await HummingbirdServer.with { server in
                let client = client(server.baseURL)
                // A refusal: the server does not serve the query.
                var unknown = client.values(of: "nope", as: Int.self).makeAsyncIterator()
                do {
                    _ = try await unknown.next()
                    Issue.record("an unknown query is refused")
                } catch let refusal as SyncClientError {
                    #expect(refusal.kind == .refused && refusal.reason == "unknownQuery")
                }
                let afterRefusal = try await unknown.next()
                #expect(afterRefusal == nil, "a refusal ends the sequence")
                var refused = client.values(of: "top", params: ["n": "-1"], as: [RankedPlayer].self).results
                    .makeAsyncIterator()
                guard case .failure(let error as SyncClientError)? = await refused.next() else {
                    Issue.record("a refused subscription is a failure")
                    return
                }
                #expect(error.kind == .refused && error.reason == "badRequest")
                let afterFailure = await refused.next()
                #expect(afterFailure == nil, "a refusal is final")

                // A failed fetch: the subscription stays and recovers.
                var count = client.values(of: "count", as: Int.self).results.makeAsyncIterator()
                let before = try await count.next()?.get()
                #expect(before == 2)
                try await server.database.write { db in try db.execute(sql: "ALTER TABLE player RENAME TO gone") }
                guard case .failure(let failure as SyncClientError)? = await count.next() else {
                    Issue.record("a failed fetch is a failure")
                    return
                }
                #expect(failure.kind == .queryFailed)
                try await server.database.write { db in try db.execute(sql: "ALTER TABLE gone RENAME TO player") }
                let after = try await count.next()?.get()
                #expect(after == 2)
                await client.close()
            }
        }
    }

    @Test func cancellingTheConsumingTaskEndsTheSequenceAndTheConnection() async throws {
        try await withTimeout(seconds: Self.timeout) {
            try await HummingbirdServer.with { server in
                let client = client(server.baseURL)
                let received = Gate()
                let consumer = Task {
                    var values = 0
                    for try await _ in client.values(of: "count", as: Int.self) {
                        values += 1
                        received.open()
                    }
                    return values
                }
                await received.wait()
                #expect(server.live.statistics.clientsConnected == 1)
                consumer.cancel()
                #expect(try await consumer.value == 1)
                // The last sequence ended: the client leaves the server.
                try await waitUntil { server.live.statistics.clientsConnected == 0 }
                await client.close()
            }
        }
    }

    @Test func closeEndsEverySequence() async throws {
        try await withTimeout(seconds: Self.timeout) {
            try await HummingbirdServer.with { server in
                let client = client(server.baseURL)
                let received = Gate()
                let consumer = Task {
                    var updates = 0
                    for try await _ in client.changes(of: "top") {
                        updates += 1
                        received.open()
                    }
                    return updates
                }
                await received.wait()
                await client.close()
                #expect(try await consumer.value == 1)
                var later = client.values(of: "count", as: Int.self).makeAsyncIterator()
                let value = try await later.next()
                #expect(value == nil, "a closed client's sequences end at once")
            }
        }
    }
}
