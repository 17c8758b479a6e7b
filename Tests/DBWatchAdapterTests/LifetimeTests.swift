import DBWatch
@testable import DBWatchDelivery
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// How long streams live on every adapter: a client that goes away is
/// released at once, graceful shutdown ends every stream with a final event
/// and returns promptly (also past a client stuck in a write), a closed or
/// replaced database ends the streams, a client that reads nothing (on a
/// stream or a WebSocket) is disconnected.
@Suite("Lifetimes: disconnect, shutdown, slow clients, on every adapter")
struct LifetimeTests {
    /// A client that goes away while nothing changes is released within
    /// seconds: no client, no observation, no subscriber in the core.
    @Test(arguments: Adapter.available, DatabaseKind.queueAndPool)
    func disconnectEndsTheSubscriptionAtOnce(adapter: Adapter, kind: DatabaseKind) async throws {
        try await withTimeout {
            try await adapter.withServer(kind: kind) { server in
                let url = "\(server.baseURL)/top/events"
                let received = Gate()
                let reader = Task {
                    let stream = try await EventStream.open(url)
                    _ = try await stream.nextEvent()
                    received.open()
                    while try await stream.next() != nil {}
                }
                await received.wait()
                #expect(server.live.statistics.clientsConnected == 1)
                #expect(server.database.observationCount == 1)
                #expect(server.database.subscriberCount == 1)

                // No write happens: the disconnect alone ends everything.
                let start = ContinuousClock.now
                reader.cancel()
                try await waitUntil {
                    server.live.statistics.clientsConnected == 0 && server.live.statistics.observations == 0
                        && server.database.observationCount == 0 && server.database.subscriberCount == 0
                }
                let elapsed = ContinuousClock.now - start
                // Below the 30 s keep-alive of the test configuration, whose
                // write would also find the connection gone (5 s on a quiet
                // machine; the rest is room for a loaded one): Hummingbird
                // sees the connection close; Vapor does not tell the route,
                // and its adapter probes an idle stream with an empty write
                // every `disconnectCheckInterval` (250 ms).
                #expect(elapsed < .seconds(25), "the disconnect was noticed after \(elapsed)")
            }
        }
    }

    /// Graceful shutdown ends every stream with `event: end` and the reason
    /// `shutdown`, returns promptly though a client reads nothing, and
    /// closes the database after the server.
    @Test(arguments: Adapter.available, DatabaseKind.queueAndPool)
    func gracefulShutdownEndsStreamsWithAFinalEventAndReturnsPromptly(adapter: Adapter, kind: DatabaseKind)
        async throws
    {
        try await withTimeout {
            try await adapter.withServer(kind: kind) { server in
                var streams: [EventStream] = []
                for path in ["/top/events", "/top/events", "/checked/events"] {
                    let stream = try await EventStream.open(server.baseURL + path)
                    _ = try await stream.nextEvent()
                    streams.append(stream)
                }
                // And a client that reads nothing.
                let stuck = try TCPTestSocket(port: server.port, receiveBuffer: 4096)
                try stuck.sendGET("/top/events")
                try await waitUntil { server.live.statistics.clientsConnected == 4 }

                let start = ContinuousClock.now
                async let shutdown: Void = server.shutDown()
                for stream in streams {
                    let final = try await stream.nextEvent()
                    #expect(final.event == "end")
                    #expect(final.data == #"{"reason":"shutdown"}"#)
                    #expect(try await stream.next() == nil)
                }
                try await shutdown
                let elapsed = ContinuousClock.now - start
                // Promptly: below Vapor's own 10 s wait for open connections,
                // far below the 30 s timeouts of the test configuration.
                #expect(elapsed < adapter.promptShutdownLimit, "shutdown took \(elapsed)")
                #expect(server.live.statistics.clientsConnected == 0)

                // The database is closed once the server has shut down.
                await #expect(throws: SQLiteError.self) {
                    try await server.database.read { db in try db.fetchOne(Int.self, sql: "SELECT 1") }
                }
                withExtendedLifetime(stuck) {}
            }
        }
    }

    /// Shutdown does not wait for a client whose write is blocked on its
    /// full socket longer than the write grace (500 ms in the test
    /// configuration), nor counts it as stalled.
    @Test(arguments: Adapter.available)
    func shutdownDisconnectsAClientBlockedInAWriteAfterTheGrace(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let stuck = try TCPTestSocket(port: server.port, receiveBuffer: 4096)
                try stuck.sendGET("/big/events")
                try await waitUntil { server.live.statistics.clientsConnected == 1 }
                // Until a value waits behind a write that does not progress.
                try await fillUntilBlocked(server)

                let start = ContinuousClock.now
                try await server.shutDown()
                let elapsed = ContinuousClock.now - start
                // The 500 ms grace, not the 30 s stall timeout of the test
                // configuration nor Vapor's 10 s wait for connections.
                #expect(elapsed < adapter.promptShutdownLimit, "shutdown took \(elapsed)")
                #expect(server.live.statistics.clientsConnected == 0)
                #expect(server.live.statistics.clientsStalled == 0)
                withExtendedLifetime(stuck) {}
            }
        }
    }

    /// Closing the database ends each stream with an error event (SQLite
    /// code 21) then `event: end`, and new requests are refused with 503.
    @Test(arguments: Adapter.available)
    func closedDatabaseEndsStreamsAndRefusesNewClients(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let stream = try await EventStream.open("\(server.baseURL)/top/events")
                _ = try await stream.nextEvent()
                await server.database.close()
                let error = try await stream.nextEvent()
                #expect(error.event == "error")
                #expect(try error.decode(ErrorJSON.self).code == 21)
                #expect(try await stream.nextEvent().event == "end")
                #expect(try await stream.next() == nil)

                let refused = try await EventStream.open("\(server.baseURL)/top/events")
                #expect(refused.status == 503)
                let current = try await fetch("\(server.baseURL)/top")
                #expect(current.status == 503)
                #expect(current.body.contains("closed"))
            }
        }
    }

    /// A database file replaced under the server ends each stream with an
    /// error event and `event: end` saying so, and new streams are refused
    /// with 503.
    @Test(arguments: Adapter.available)
    func replacedDatabaseFileEndsStreamsWithAnErrorEvent(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer(kind: .pool, detectsExternalChanges: true) { server in
                let path = try #require(server.database as? DatabasePool).path
                let stream = try await EventStream.open("\(server.baseURL)/top/events")
                _ = try await stream.nextEvent()
                let replacement = try await DatabaseKind.pool.makeDatabase()
                let replacementPath = try #require(replacement as? DatabasePool).path
                await replacement.close()
                #expect(rename(replacementPath, path) == 0)
                let error = try await stream.nextEvent()
                #expect(error.event == "error")
                #expect(
                    try error.decode(ErrorJSON.self) == ErrorJSON(message: "the database file was replaced or deleted"))
                let end = try await stream.nextEvent()
                #expect(end.event == "end")
                #expect(end.data == #"{"reason":"database file replaced"}"#)
                #expect(try await stream.next() == nil)

                let refused = try await EventStream.open("\(server.baseURL)/top/events")
                #expect(refused.status == 503)
                #expect(try await refused.remainingBody().contains("replaced"))
            }
        }
    }

    /// A client that reads nothing holds one pending value (newer ones
    /// replace it) and is disconnected once its write makes no progress for
    /// the stall timeout; its observation ends.
    @Test(arguments: Adapter.available)
    func slowClientHoldsOnePendingValueAndIsDisconnected(adapter: Adapter) async throws {
        let configuration = {
            var configuration = testConfiguration()
            // Long enough for values to pile up behind the blocked write first,
            // also under the thread sanitizer.
            configuration.stalledClientTimeout = .seconds(2)
            return configuration
        }()
        try await withTimeout {
            try await adapter.withServer(configuration: configuration) { server in
                let stuck = try TCPTestSocket(port: server.port, receiveBuffer: 4096)
                try stuck.sendGET("/big/events")
                try await waitUntil { server.live.statistics.clientsConnected == 1 }
                // Large values until the socket is full, a write waits, and
                // the client is disconnected for making no progress.
                try await writeUntilStalled(server)
                // While the write waited, newer values replaced the pending
                // one (latest wins) instead of piling up.
                #expect(server.live.statistics.valuesSkipped > 0)
                // The blocked write ends with the connection the adapter closes.
                try await waitUntil {
                    server.live.statistics.clientsConnected == 0 && server.database.observationCount == 0
                }
                withExtendedLifetime(stuck) {}
            }
        }
    }

    /// A WebSocket client that reads nothing is disconnected once a write
    /// makes no progress for the stall timeout, and its observation ends.
    @Test(arguments: Adapter.available)
    func aWebSocketClientThatReadsNothingIsDisconnected(adapter: Adapter) async throws {
        let configuration = {
            var configuration = testConfiguration()
            configuration.stalledClientTimeout = .seconds(2)
            return configuration
        }()
        try await withTimeout {
            try await adapter.withServer(configuration: configuration) { server in
                let stuck = try TCPTestSocket(port: server.port, receiveBuffer: 4096)
                try await stuck.openWebSocket("/big/socket", sending: #"{"limit":1}"#)
                try await waitUntil { server.live.statistics.observations == 1 }
                // Large values until a write waits on the full socket and
                // the client is disconnected for making no progress: the
                // blocked write ends with the connection the adapter closes.
                try await writeUntilStalled(server)
                try await waitUntil {
                    server.live.statistics.clientsConnected == 0 && server.database.observationCount == 0
                }
                withExtendedLifetime(stuck) {}
            }
        }
    }

    /// Writes large values until a write to a client that reads nothing has
    /// waited for its full socket a while, and a newer value replaced the
    /// pending one (latest wins).
    ///
    /// A replaced value alone does not prove a full socket: under load, a
    /// client's write loop can be late to take a value while its socket
    /// still has room.
    private func fillUntilBlocked(_ server: any AdapterServer) async throws {
        var round = 0
        while server.live.statistics.valuesSkipped == 0
            || longestWriteInProgress(server.live).map({ $0 < .milliseconds(300) }) ?? true
        {
            try #require(server.live.statistics.clientsStalled == 0, "the client stalled before a value piled up")
            round += 1
            try #require(round < 5_000, "the client's writes never blocked")
            try await writeLargeValue(round: round, to: server)
        }
    }

    /// Writes large values until the client that reads nothing is
    /// disconnected for making no progress.
    private func writeUntilStalled(_ server: any AdapterServer) async throws {
        var round = 0
        while server.live.statistics.clientsStalled == 0 {
            round += 1
            try #require(round < 5_000, "the client was never disconnected")
            try await writeLargeValue(round: round, to: server)
        }
    }

    /// One write of a 256 KiB value, at a writer's pace.
    private func writeLargeValue(round: Int, to server: any AdapterServer) async throws {
        let text = String(repeating: "\(round % 10)", count: 256 * 1024)
        try await server.database.write { db in
            try db.execute(sql: "UPDATE blob SET text = ?", arguments: [text])
        }
        try await Task.sleep(for: .milliseconds(5))  // a writer's pace
    }
}

/// How long the oldest write to a client has been waiting for its socket,
/// if one is in progress: tells a client whose socket is full from one that
/// is only slow to be scheduled.
private func longestWriteInProgress(_ live: LiveQueries) -> Duration? {
    let now = ContinuousClock.now
    let clients = live.state.withLock { Array($0.clients.values) }
    return clients.compactMap { $0.writeInProgress(now: now) }.max()
}
