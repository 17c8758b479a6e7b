import DBWatch
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatchHummingbird

/// A message from the server on a WebSocket.
private struct SocketMessage: Decodable {
    var type: String
    var value: [Player]?
    var error: ErrorJSON?
    var reason: String?
}

@Suite("The cap on shared observations")
struct ObservationCapTests {
    /// The test configuration with at most `max` shared observations.
    func capped(_ max: Int) -> LiveQueriesConfiguration {
        var configuration = testConfiguration()
        configuration.maxObservations = max
        configuration.retryAfterSeconds = 3
        return configuration
    }

    @Test func aNewDistinctStreamPastTheCapIsA503WithRetryAfterAndOpenStreamsGoOn() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(configuration: capped(2)) { server in
                let one = try await EventStream.open("\(server.baseURL)/top/events?limit=1")
                _ = try await one.nextEvent()
                let two = try await EventStream.open("\(server.baseURL)/top/events?limit=2")
                _ = try await two.nextEvent()
                #expect(server.live.statistics.observations == 2)

                let refused = try await EventStream.open("\(server.baseURL)/top/events?limit=3")
                #expect(refused.status == 503)
                #expect(refused.headers["retry-after"] == "3")
                let body = try JSONDecoder().decode(ErrorJSON.self, from: Data(try await refused.remainingBody().utf8))
                #expect(body.message.contains("too many"))
                // Another scope is another observation: refused too.
                let otherScope = try await EventStream.open("\(server.baseURL)/top/events?limit=1&scope=b")
                #expect(otherScope.status == 503)
                #expect(server.live.statistics.observations == 2)
                #expect(server.live.statistics.observationsRefused == 2)

                // A request equal to one observed joins it.
                let joining = try await EventStream.open("\(server.baseURL)/top/events?limit=1")
                #expect(joining.status == 200)
                #expect(try await joining.nextEvent().data == #"[{"name":"arthur","score":100}]"#)
                // One-shot answers start no observation.
                let current = try await fetch("\(server.baseURL)/top?limit=3")
                #expect(current.status == 200)

                // Open streams go on.
                try await server.database.write { db in
                    try db.execute(sql: "INSERT INTO player (name, score) VALUES ('zoe', 500)")
                }
                #expect(try await one.nextEvent().data == #"[{"name":"zoe","score":500}]"#)
                #expect(try await joining.nextEvent().data == #"[{"name":"zoe","score":500}]"#)
                #expect(try await two.nextEvent().data?.hasPrefix(#"[{"name":"zoe""#) == true)
            }
        }
    }

    @Test func nothingLeaksWhenStreamsEndAndTheCapFreesUp() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(configuration: capped(2)) { server in
                let (opened, openedContinuation) = AsyncStream.makeStream(of: Void.self)
                let readers = (1...2).map { limit in
                    Task {
                        let stream = try await EventStream.open("\(server.baseURL)/top/events?limit=\(limit)")
                        _ = try await stream.nextEvent()
                        openedContinuation.yield()
                        while try await stream.next() != nil {}
                    }
                }
                var iterator = opened.makeAsyncIterator()
                await iterator.next()
                await iterator.next()
                #expect(try await fetchStatus("\(server.baseURL)/top/events?limit=3") == 503)

                for reader in readers { reader.cancel() }
                try await waitUntil {
                    server.live.statistics.observations == 0 && server.live.statistics.clientsConnected == 0
                        && server.database.observationCount == 0
                }
                let third = try await EventStream.open("\(server.baseURL)/top/events?limit=3")
                #expect(third.status == 200)
                _ = try await third.nextEvent()
                #expect(server.live.statistics.observations == 1)
            }
        }
    }

    @Test func aWebSocketRequestPastTheCapIsAnErrorMessageAndTheConnectionStaysOpen() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(configuration: capped(1)) { server in
                let held = try await EventStream.open("\(server.baseURL)/top/events?limit=1")
                _ = try await held.nextEvent()
                try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)/top/socket") { socket in
                    func next() async throws -> SocketMessage { try await socket.next(SocketMessage.self) }
                    try await socket.send(#"{"limit":2}"#)
                    let refused = try await next()
                    #expect(refused.type == "error")
                    #expect(refused.error?.message.contains("too many") == true)
                    // The same connection, a request already observed: joins it.
                    try await socket.send(#"{"limit":1}"#)
                    let value = try await next()
                    #expect(value.type == "value")
                    #expect(value.value == [Player(name: "arthur", score: 100)])
                    try await socket.close()
                }
                #expect(server.live.statistics.observations == 1)
            }
        }
    }

    @Test func aWebSocketAloneOnItsObservationMaySwitchRequestsAtTheCap() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(configuration: capped(1)) { server in
                try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)/top/socket") { socket in
                    func next() async throws -> SocketMessage { try await socket.next(SocketMessage.self) }
                    try await socket.send(#"{"limit":1}"#)
                    #expect(try await next().value == [Player(name: "arthur", score: 100)])
                    // Its own observation, which it leaves, does not count.
                    try await socket.send(#"{"limit":2}"#)
                    let switched = try await next()
                    #expect(switched.type == "value")
                    #expect(switched.value?.count == 2)
                    try await socket.close()
                }
                try await waitUntil { server.live.statistics.observations == 0 }
            }
        }
    }

    /// The status of a request, its body read and dropped.
    private func fetchStatus(_ url: String) async throws -> Int {
        let stream = try await EventStream.open(url)
        _ = try await stream.remainingBody()
        return stream.status
    }
}
