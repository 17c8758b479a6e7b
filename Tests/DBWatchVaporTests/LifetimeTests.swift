#if Vapor
    import DBWatch
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    @testable import DBWatchVapor
    import Foundation
    import Testing
    import Vapor

    @Suite("Vapor: disconnect, graceful shutdown, slow clients")
    struct LifetimeTests {
        @Test(arguments: DatabaseKind.queueAndPool)
        func disconnectEndsTheSubscriptionAtOnce(kind: DatabaseKind) async throws {
            try await withTimeout {
                try await LiveServer.with(kind: kind) { server in
                    let url = "\(server.baseURL)/top/events"
                    let (received, receivedContinuation) = AsyncStream.makeStream(of: Void.self)
                    let reader = Task {
                        let stream = try await EventStream.open(url)
                        _ = try await stream.nextEvent()
                        receivedContinuation.yield()
                        while try await stream.next() != nil {}
                    }
                    var iterator = received.makeAsyncIterator()
                    await iterator.next()
                    #expect(server.live.statistics.clientsConnected == 1)
                    #expect(server.database.observationCount == 1)

                    // No value is written: the disconnect alone ends everything,
                    // noticed by the probe of an idle stream.
                    let start = ContinuousClock.now
                    reader.cancel()
                    try await waitUntil {
                        server.live.statistics.clientsConnected == 0 && server.live.statistics.observations == 0
                            && server.database.observationCount == 0 && server.database.subscriberCount == 0
                    }
                    let elapsed = ContinuousClock.now - start
                    // A few probe intervals, far below the 30 s keep-alive of the test configuration.
                    #expect(elapsed < .seconds(5), "the disconnect was noticed after \(elapsed)")
                }
            }
        }

        @Test(arguments: DatabaseKind.queueAndPool)
        func gracefulShutdownEndsStreamsWithAFinalEventAndReturnsPromptly(kind: DatabaseKind) async throws {
            try await withTimeout {
                try await LiveServer.with(kind: kind) { server in
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
                    // Promptly: Vapor's own wait for open connections is 10 s,
                    // the test configuration's timeouts 30 s.
                    #expect(elapsed < .seconds(8), "shutdown took \(elapsed)")
                    #expect(server.live.statistics.clientsConnected == 0)

                    // The database is closed once the application has shut down.
                    await #expect(throws: SQLiteError.self) {
                        try await server.database.read { db in try db.fetchOne(Int.self, sql: "SELECT 1") }
                    }
                    withExtendedLifetime(stuck) {}
                }
            }
        }

        @Test func theLiveQueriesStopBeforeVaporsServerAndRefuseNewClientsMeanwhile() async throws {
            let held = HeldShutdown()
            try await withTimeout {
                try await LiveServer.with(shutdownAfterLiveQueries: held) { server in
                    let stream = try await EventStream.open("\(server.baseURL)/top/events")
                    _ = try await stream.nextEvent()
                    async let shutdown: Void = server.shutDown()
                    // Vapor shuts its lifecycle handlers down before its HTTP
                    // server: the streams have ended and the database is
                    // closed while the server still answers.
                    #expect(try await stream.nextEvent().event == "end")
                    await held.reached.wait()
                    let refused = try await EventStream.open("\(server.baseURL)/top/events")
                    #expect(refused.status == 503)
                    #expect(try await refused.remainingBody() == #"{"message":"the server is shutting down"}"#)
                    let current = try await fetch("\(server.baseURL)/top")
                    #expect(current.status == 503)
                    await #expect(throws: SQLiteError.self) {
                        try await server.database.read { db in try db.fetchOne(Int.self, sql: "SELECT 1") }
                    }
                    held.release.open()
                    try await shutdown
                }
            }
        }

        @Test func shutdownDisconnectsAClientBlockedInAWriteAfterTheGrace() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    let stuck = try TCPTestSocket(port: server.port, receiveBuffer: 4096)
                    try stuck.sendGET("/big/events")
                    try await waitUntil { server.live.statistics.clientsConnected == 1 }
                    // Until a value waits behind a write that does not progress.
                    try await fillUntilBlocked(server)

                    let start = ContinuousClock.now
                    try await server.shutDown()
                    let elapsed = ContinuousClock.now - start
                    // The 500 ms grace of the test configuration, not its 30 s
                    // stall timeout nor Vapor's 10 s wait for connections.
                    #expect(elapsed < .seconds(8), "shutdown took \(elapsed)")
                    #expect(server.live.statistics.clientsConnected == 0)
                    #expect(server.live.statistics.clientsStalled == 0)
                    withExtendedLifetime(stuck) {}
                }
            }
        }

        @Test func closedDatabaseEndsStreamsAndRefusesNewClients() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
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

        @Test func slowClientHoldsOnePendingValueAndIsDisconnected() async throws {
            let configuration = {
                var configuration = testConfiguration()
                // Long enough for values to pile up behind the blocked write first.
                configuration.stalledClientTimeout = .seconds(2)
                return configuration
            }()
            try await withTimeout {
                try await LiveServer.with(configuration: configuration) { server in
                    let stuck = try TCPTestSocket(port: server.port, receiveBuffer: 4096)
                    try stuck.sendGET("/big/events")
                    try await waitUntil { server.live.statistics.clientsConnected == 1 }
                    // Large values until the socket is full, a write waits, and
                    // the client is disconnected for making no progress.
                    var round = 0
                    while server.live.statistics.clientsStalled == 0 {
                        round += 1
                        try #require(round < 5_000, "the client was never disconnected")
                        try await writeLargeValue(round: round, to: server)
                    }
                    // While the write waited, newer values replaced the pending
                    // one (latest wins) instead of piling up.
                    #expect(server.live.statistics.valuesSkipped > 0)
                    // The blocked write ends with the connection Vapor closes.
                    try await waitUntil {
                        server.live.statistics.clientsConnected == 0 && server.database.observationCount == 0
                    }
                    withExtendedLifetime(stuck) {}
                }
            }
        }

        @Test func aWebSocketClientThatReadsNothingIsDisconnected() async throws {
            let configuration = {
                var configuration = testConfiguration()
                configuration.stalledClientTimeout = .seconds(2)
                return configuration
            }()
            try await withTimeout {
                try await LiveServer.with(configuration: configuration) { server in
                    let stuck = try TCPTestSocket(port: server.port, receiveBuffer: 4096)
                    try stuck.openWebSocket("/big/socket", sending: #"{"limit":1}"#)
                    try await waitUntil { server.live.statistics.observations == 1 }
                    // Large values until a write waits on the full socket and
                    // the client is disconnected for making no progress: the
                    // blocked write ends with the connection the adapter closes.
                    var round = 0
                    while server.live.statistics.clientsStalled == 0 {
                        round += 1
                        try #require(round < 5_000, "the client was never disconnected")
                        try await writeLargeValue(round: round, to: server)
                    }
                    try await waitUntil {
                        server.live.statistics.clientsConnected == 0 && server.database.observationCount == 0
                    }
                    withExtendedLifetime(stuck) {}
                }
            }
        }

        /// A lifecycle handler whose shutdown says it began and waits to be released.
        private struct HeldShutdown: LifecycleHandler {
            let reached = Gate()
            let release = Gate()

            func shutdownAsync(_ application: Application) async {
                reached.open()
                await release.wait()
            }
        }

        /// Writes large values until one waits behind a write to a client
        /// that reads nothing, and a newer value replaced it.
        private func fillUntilBlocked(_ server: LiveServer) async throws {
            var round = 0
            while server.live.statistics.valuesSkipped < 3 {
                try #require(server.live.statistics.clientsStalled == 0, "the client stalled before a value piled up")
                round += 1
                try #require(round < 5_000, "the client's writes never blocked")
                try await writeLargeValue(round: round, to: server)
            }
        }

        /// One write of a 256 KiB value, at a writer's pace.
        private func writeLargeValue(round: Int, to server: LiveServer) async throws {
            let text = String(repeating: "\(round % 10)", count: 256 * 1024)
            try await server.database.write { db in
                try db.execute(sql: "UPDATE blob SET text = ?", arguments: [text])
            }
            try await Task.sleep(for: .milliseconds(5))  // a writer's pace
        }
    }
#endif
