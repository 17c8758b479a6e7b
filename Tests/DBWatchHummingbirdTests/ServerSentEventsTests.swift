import AsyncHTTPClient
import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Testing

@Suite("Server-sent events")
struct ServerSentEventsTests {
    @Test(arguments: DatabaseKind.queueAndPool)
    func firstValueAtOnceThenUpdateAfterAWrite(kind: DatabaseKind) async throws {
        try await withTimeout {
            try await LiveServer.with(kind: kind) { server in
                let stream = try await EventStream.open("\(server.baseURL)/top/events")
                #expect(stream.status == 200)
                #expect(stream.headers["content-type"] == "text/event-stream")
                #expect(stream.headers["cache-control"] == "no-cache")
                let first = try await stream.nextEvent()
                #expect(first.event == nil)
                #expect(
                    try first.decode([Player].self) == [
                        Player(name: "arthur", score: 100), Player(name: "barbara", score: 80),
                    ])
                let firstVersion = try #require(first.version)

                let post = try await fetch("\(server.baseURL)/players/carol/90", method: "POST")
                #expect(post.status == 201)
                let second = try await stream.nextEvent()
                #expect(
                    try second.decode([Player].self) == [
                        Player(name: "arthur", score: 100), Player(name: "carol", score: 90),
                        Player(name: "barbara", score: 80),
                    ])
                #expect(try #require(second.version) > firstVersion)
            }
        }
    }

    @Test func observationOptionsRateLimitTheSharedObservation() async throws {
        let configuration = {
            var configuration = testConfiguration()
            // Far longer than the test: after the first value, a change waits.
            configuration.observationOptions = ObservationOptions(minimumInterval: .seconds(3_600))
            configuration.keepAliveInterval = .milliseconds(300)
            return configuration
        }()
        try await withTimeout {
            try await LiveServer.with(configuration: configuration) { server in
                let stream = try await EventStream.open("\(server.baseURL)/top/events")
                var event = try #require(try await stream.next(includingComments: true))
                while event.isComment { event = try #require(try await stream.next(includingComments: true)) }
                #expect(try event.decode([Player].self).count == 2)  // the first value is not delayed
                let post = try await fetch("\(server.baseURL)/players/carol/90", method: "POST")
                #expect(post.status == 201)
                // The change waits for the interval: what comes next is a
                // keep-alive, where an observation without a limit sends
                // the new value within milliseconds.
                let next = try #require(try await stream.next(includingComments: true))
                #expect(next.comment == "keep-alive", "\(next)")
                #expect(server.live.statistics.fetches == 1)
            }
        }
    }

    @Test func valueThatWritesItsOwnJSONIsServedAsWritten() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let current = try await fetch("\(server.baseURL)/hand")
                #expect(current.status == 200)
                #expect(current.body == #"[["arthur",100],["barbara",80]]"#)
                let stream = try await EventStream.open("\(server.baseURL)/hand/events")
                #expect(try await stream.nextEvent().data == #"[["arthur",100],["barbara",80]]"#)
                _ = try await fetch("\(server.baseURL)/players/carol/90", method: "POST")
                #expect(try await stream.nextEvent().data == #"[["arthur",100],["carol",90],["barbara",80]]"#)
            }
        }
    }

    @Test func failingFetchIsAnErrorEventAndTheStreamRecovers() async throws {
        let logs = LogRecorder()
        try await withTimeout {
            try await LiveServer.with(logs: logs) { server in
                let stream = try await EventStream.open("\(server.baseURL)/checked/events")
                #expect(try await stream.nextEvent().decode([Player].self).count == 2)

                try await server.database.write { db in try db.execute(sql: "UPDATE control SET fail = 1") }
                let error = try await stream.nextEvent()
                #expect(error.event == "error")
                #expect(error.id == nil)
                let body = try error.decode(ErrorJSON.self)
                #expect(body.message == "no such table: missing_table")
                #expect(body.code == 1)

                try await server.database.write { db in
                    try db.execute(sql: "UPDATE control SET fail = 0; INSERT INTO player VALUES ('carol', 1)")
                }
                let recovered = try await stream.nextEvent()
                #expect(recovered.event == nil)
                #expect(try recovered.decode([Player].self).map(\.name) == ["arthur", "barbara", "carol"])
                #expect(server.live.statistics.errorsSent == 1)

                // Logged once at warning level, with the request's description,
                // by the core through the database's logger: the integration
                // does not log the shared observation's failure a second time.
                let warnings = logs.all.filter { $0.level == .warning }
                #expect(warnings.count == 1)
                let warning = try #require(warnings.first)
                #expect(warning.label == "dbwatch")
                #expect(warning.message.contains("CheckedPlayers()"))
                #expect(warning.message.contains("no such table: missing_table"))
            }
        }
    }

    @Test func resumeWithLastEventIDSendsNoDuplicate() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let url = "\(server.baseURL)/top/events"
                let holder = try await EventStream.open(url)
                let held = try await holder.nextEvent()
                let heldID = try #require(held.id)

                // Same observation running: the resumed client gets nothing
                // until the value changes, then the new value.
                let resumed = try await EventStream.open(url, lastEventID: heldID)
                try await waitUntil { server.live.statistics.clientsConnected == 2 }
                _ = try await fetch("\(server.baseURL)/players/carol/90", method: "POST")
                let changed = try await resumed.nextEvent()
                #expect(try changed.decode([Player].self).map(\.name) == ["arthur", "carol", "barbara"])
                #expect(try await holder.nextEvent().id == changed.id)
                let changedID = try #require(changed.id)

                // One that missed a value gets the current one at once.
                let missed = try await EventStream.open(url, lastEventID: heldID)
                #expect(try await missed.nextEvent().id == changedID)
            }
        }
    }

    @Test func resumeAfterTheObservationEndedSendsNoDuplicate() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let url = "\(server.baseURL)/top/events"
                let heldID = try await Task {
                    let stream = try await EventStream.open(url)
                    return try #require(try await stream.nextEvent().id)
                }.value
                // The first client is gone (its task ended): its observation too.
                try await waitUntil {
                    server.live.statistics.observations == 0 && server.database.observationCount == 0
                }

                let resumed = try await EventStream.open(url, lastEventID: heldID)
                try await waitUntil { server.live.statistics.fetches >= 2 }
                _ = try await fetch("\(server.baseURL)/players/carol/90", method: "POST")
                let changed = try await resumed.nextEvent()
                #expect(try changed.decode([Player].self).map(\.name) == ["arthur", "carol", "barbara"])
                #expect(try #require(changed.version) > UInt64(heldID.split(separator: "-")[0])!)
            }
        }
    }

    @Test func keepAliveCommentWhileIdle() async throws {
        let configuration = {
            var configuration = testConfiguration()
            configuration.keepAliveInterval = .milliseconds(50)
            return configuration
        }()
        try await withTimeout {
            try await LiveServer.with(configuration: configuration) { server in
                let stream = try await EventStream.open("\(server.baseURL)/top/events")
                // A keep-alive may come before the first value on a busy machine.
                var event = try #require(try await stream.next(includingComments: true))
                while event.isComment { event = try #require(try await stream.next(includingComments: true)) }
                #expect(try event.decode([Player].self).count == 2)
                // Nothing changes: the next thing on the stream is a keep-alive.
                let comment = try #require(try await stream.next(includingComments: true))
                #expect(comment.comment == "keep-alive")
            }
        }
    }

    @Test func clientsOfOneRequestShareOneObservationAndOneFetchPerChange() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let url = "\(server.baseURL)/top/events"
                var streams: [EventStream] = []
                for _ in 0..<4 {
                    let stream = try await EventStream.open(url)
                    _ = try await stream.nextEvent()
                    streams.append(stream)
                }
                #expect(server.live.statistics.observations == 1)
                #expect(server.database.observationCount == 1)
                // Shared by the integration: one subscription in the core for four clients.
                #expect(server.database.subscriberCount == 1)
                let fetchesBefore = server.live.statistics.fetches
                _ = try await fetch("\(server.baseURL)/players/carol/90", method: "POST")
                var ids: Set<String> = []
                for stream in streams { ids.insert(try #require(try await stream.nextEvent().id)) }
                #expect(ids.count == 1)
                #expect(server.live.statistics.fetches == fetchesBefore + 1)
            }
        }
    }

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

    private func fanOut(to clients: Int, httpClient: HTTPClient) async throws {
        try await withTimeout {
            try await LiveServer.with { server in
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

    @Test func differentScopesNeverShare() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let alice = try await EventStream.open("\(server.baseURL)/top/events?scope=alice")
                let bob = try await EventStream.open("\(server.baseURL)/top/events?scope=bob")
                let alice2 = try await EventStream.open("\(server.baseURL)/top/events?scope=alice")
                for stream in [alice, bob, alice2] { _ = try await stream.nextEvent() }
                #expect(server.live.statistics.observations == 2)
                #expect(server.live.statistics.clientsConnected == 3)
            }
        }
    }
}
