import AsyncHTTPClient
import DBWatch
import DBWatchDelivery
@testable import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Hummingbird
import HummingbirdAuth
import Logging
import NIOCore
import ServiceLifecycle
import Testing

/// Who a bearer token stands for in these tests: the leaderboard's length
/// they may see.
struct Reader: Hashable, Sendable {
    var name: String
    var limit: Int
}

/// `LiveQueries` behind HummingbirdAuth, over real sockets: a
/// `BearerTokenAuthenticator`, the identity as the stream's scope and in
/// its request, and a 401 with a JSON body without a token.
@Suite("Authentication with HummingbirdAuth", .hangLimit(minutes: 1))
struct AuthenticationTests {
    typealias Context = BasicAuthRequestContext<Reader>

    static let tokens = [
        "alice-token": Reader(name: "alice", limit: 1), "alice-laptop": Reader(name: "alice", limit: 1),
        "bob-token": Reader(name: "bob", limit: 2),
    ]

    /// Runs `body` with the URL of a server whose `/mine/events` and
    /// `/mine` need a token, and whose `/open/events` does not; its debug
    /// lines go to `logs` when given.
    func withServer(
        logs: LogRecorder? = nil, _ body: @Sendable (String, LiveQueries) async throws -> Void
    ) async throws {
        var logger = Logger(label: "AuthenticationTests")
        logger.logLevel = .error
        if let logs { logger = logs.logger(label: "AuthenticationTests", level: .debug) }
        let database = try await DatabaseKind.inMemory.makeDatabase()
        let live = LiveQueries(database, configuration: testConfiguration(), logger: logger)
        let router = Router(context: Context.self)
        router.add(middleware: BearerTokenAuthenticator(tokens: Self.tokens))
        router.get("mine/events") { request, context in
            live.authenticatedEvents(for: request, context: context) { reader in TopPlayers(limit: reader.limit) }
        }
        router.get("mine") { _, context in
            await live.authenticatedCurrent(context: context) { reader in TopPlayers(limit: reader.limit) }
        }
        router.group("guarded").add(middleware: LiveQueriesAuthenticationMiddleware(realm: "tests"))
            .get("events") { request, context in
                live.events(TopPlayers(limit: 5), for: request, context: context, scope: context.identity)
            }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), services: [live],
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            running.cancel()
            throw TimeoutError(seconds: 0)
        }
        do {
            try await body("http://127.0.0.1:\(port)/", live)
        } catch {
            await group.triggerGracefulShutdown()
            try? await running.value
            throw error
        }
        await group.triggerGracefulShutdown()
        try await running.value
    }

    /// Opens an event stream with `Authorization: Bearer token`.
    func stream(_ url: String, token: String?) async throws -> (status: Int, iterator: EventStream) {
        let stream = try await EventStream.open(url, headers: token.map { [("Authorization", "Bearer " + $0)] } ?? [])
        return (stream.status, stream)
    }

    @Test func requestsWithoutAValidTokenAreA401WithABearerChallengeAndAJSONBody() async throws {
        let logs = LogRecorder()
        try await withServer(logs: logs) { url, live in
            for token in [nil, "alice-tokenx", "alice-toke", "", "Alice-token"] as [String?] {
                for path in ["mine/events", "mine", "guarded/events"] {
                    let answer = try await EventStream.open(
                        url + path, headers: token.map { [("Authorization", "Bearer " + $0)] } ?? [])
                    #expect(answer.status == 401, "\(path) \(token ?? "-")")
                    #expect(answer.headers["www-authenticate"]?.hasPrefix("Bearer realm=") == true)
                    #expect(answer.headers["content-type"] == "application/json; charset=utf-8")
                    let body = try JSONDecoder().decode(
                        ErrorJSON.self, from: Data(try await answer.remainingBody().utf8))
                    #expect(body.message.contains("bearer token"))
                }
            }
            #expect(live.statistics.observations == 0)
        }
        // Each 401 is one debug line with the stable keys (`/mine`'s
        // `authenticatedCurrent` has no request, so no path).
        let refusals = logs.all.filter { $0.metadata[LogKey.status] != nil }
        #expect(refusals.count == 15, "\(refusals.map(\.metadata))")
        #expect(refusals.allSatisfy { $0.level == .debug && $0.message == "Request refused" })
        #expect(refusals.allSatisfy { $0.metadata[LogKey.status] == "401" })
        #expect(refusals.filter { $0.metadata[LogKey.path] == "/mine/events" }.count == 5)
        #expect(refusals.filter { $0.metadata[LogKey.path] == "/guarded/events" }.count == 5)
        #expect(refusals.filter { $0.metadata[LogKey.path] == nil }.count == 5)
    }

    @Test func theIdentityChoosesTheRequestAndEqualIdentitiesShareOneObservation() async throws {
        try await withServer { url, live in
            let alice = try await EventStream.open(
                url + "mine/events", headers: [("Authorization", "Bearer alice-token")])
            let aliceAgain = try await EventStream.open(
                url + "mine/events", headers: [("Authorization", "Bearer alice-laptop")])
            let bob = try await EventStream.open(url + "mine/events", headers: [("Authorization", "bearer bob-token")])
            #expect([alice.status, aliceAgain.status, bob.status] as [Int] == [200, 200, 200])
            let aliceFirst = try await alice.nextEvent()
            #expect(try aliceFirst.decode([Player].self).map(\.name) == ["arthur"])
            #expect(try await aliceAgain.nextEvent() == aliceFirst)
            #expect(try await bob.nextEvent().decode([Player].self).map(\.name) == ["arthur", "barbara"])
            // Two readers, two observations, whatever the number of clients.
            #expect(live.statistics.observations == 2)
            #expect(live.statistics.clientsConnected == 3)

            try await live.database.write { db in
                try db.execute(sql: "UPDATE player SET score = 1000 WHERE name = 'barbara'")
            }
            let aliceNext = try await alice.nextEvent()
            #expect(try aliceNext.decode([Player].self).map(\.name) == ["barbara"])
            #expect(try await aliceAgain.nextEvent() == aliceNext)

            var request = HTTPClientRequest(url: url + "mine")
            request.headers.add(name: "Authorization", value: "Bearer bob-token")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            #expect(response.status == .ok)
            let players = try JSONDecoder().decode(
                [Player].self, from: Data(String(buffer: try await response.body.collect(upTo: 1 << 20)).utf8))
            #expect(players.map(\.name) == ["barbara", "arthur"])
        }
    }

    @Test func theComparisonOfTokensLooksAtEveryByte() {
        let authenticator = BearerTokenAuthenticator<Context>(tokens: Self.tokens)
        #expect(authenticator.identity(for: Array("bob-token".utf8)) == Reader(name: "bob", limit: 2))
        for wrong in ["bob-toke", "bob-tokenn", "Bob-token", "", "bob-token\u{0}"] {
            #expect(authenticator.identity(for: Array(wrong.utf8)) == nil, "\(wrong)")
        }
    }
}
