import DBWatch
import DBWatchServerTestSupport
import DBWatchTestSupport
import Testing

/// Server-sent events as every adapter serves them: the first value at
/// once, a new value after each commit that changes it, errors as events,
/// resumption with `Last-Event-ID`, keep-alives, one shared observation
/// per request.
@Suite("Server-sent events, on every adapter")
struct ServerSentEventsTests {
    /// A stream answers `text/event-stream` uncached, sends the current
    /// value at once, and a newer version after a commit that changes it.
    @Test(arguments: Adapter.available, DatabaseKind.queueAndPool)
    func firstValueAtOnceThenUpdateAfterAWrite(adapter: Adapter, kind: DatabaseKind) async throws {
        try await withTimeout {
            try await adapter.withServer(kind: kind) { server in
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

    /// The observation options of the configuration rate-limit the shared
    /// observation: the first value comes at once, a change waits for the
    /// interval (a keep-alive comes first).
    @Test(arguments: Adapter.available)
    func observationOptionsRateLimitTheSharedObservation(adapter: Adapter) async throws {
        let configuration = {
            var configuration = testConfiguration()
            // Far longer than the test: after the first value, a change waits.
            configuration.observationOptions = ObservationOptions(minimumInterval: .seconds(3_600))
            configuration.keepAliveInterval = .milliseconds(300)
            return configuration
        }()
        try await withTimeout {
            try await adapter.withServer(configuration: configuration) { server in
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

    /// A value that writes its own JSON is served as written, once and as
    /// events.
    @Test(arguments: Adapter.available)
    func valueThatWritesItsOwnJSONIsServedAsWritten(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
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

    /// A failing fetch is an `event: error` in the one JSON shape, without
    /// an id; the stream goes on and recovers with the next good value; the
    /// failure is logged once, by the core.
    @Test(arguments: Adapter.available)
    func failingFetchIsAnErrorEventAndTheStreamRecovers(adapter: Adapter) async throws {
        let logs = LogRecorder()
        try await withTimeout {
            try await adapter.withServer(logs: logs) { server in
                let stream = try await EventStream.open("\(server.baseURL)/checked/events")
                #expect(try await stream.nextEvent().decode([Player].self).count == 2)

                try await server.database.write { db in try db.execute(sql: "UPDATE control SET fail = 1") }
                let error = try await stream.nextEvent()
                #expect(error.event == "error")
                #expect(error.id == nil)
                #expect(try error.decode(ErrorJSON.self) == ErrorJSON(message: "no such table: missing_table", code: 1))

                try await server.database.write { db in
                    try db.execute(sql: "UPDATE control SET fail = 0; INSERT INTO player VALUES ('carol', 1)")
                }
                let recovered = try await stream.nextEvent()
                #expect(recovered.event == nil)
                #expect(try recovered.decode([Player].self).map(\.name) == ["arthur", "barbara", "carol"])
                #expect(server.live.statistics.errorsSent == 1)

                // Logged once at warning level, with the request's description,
                // by the core through the database's logger: the adapter does
                // not log the shared observation's failure a second time.
                let warnings = logs.all.filter { $0.level == .warning }
                #expect(warnings.count == 1, "\(warnings.map(\.message))")
                let warning = try #require(warnings.first)
                #expect(warning.label == "dbwatch")
                #expect(warning.message.contains("CheckedPlayers()"))
                #expect(warning.message.contains("no such table: missing_table"))
            }
        }
    }

    /// A client resuming with the `Last-Event-ID` of the current value gets
    /// nothing until the value changes; one resuming with an older id gets
    /// the current value at once.
    @Test(arguments: Adapter.available)
    func resumeWithLastEventIDSendsNoDuplicate(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let url = "\(server.baseURL)/top/events"
                let holder = try await EventStream.open(url)
                let heldID = try #require(try await holder.nextEvent().id)

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

    /// A client resuming after its observation ended (a new observation
    /// fetched the same value) gets nothing until the value changes, then
    /// a newer version.
    @Test(arguments: Adapter.available)
    func resumeAfterTheObservationEndedSendsNoDuplicate(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
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

    /// An idle stream gets a `: keep-alive` comment every keep-alive interval.
    @Test(arguments: Adapter.available)
    func keepAliveCommentWhileIdle(adapter: Adapter) async throws {
        let configuration = {
            var configuration = testConfiguration()
            configuration.keepAliveInterval = .milliseconds(50)
            return configuration
        }()
        try await withTimeout {
            try await adapter.withServer(configuration: configuration) { server in
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

    /// Clients of one request share one observation (one subscription in
    /// the core), and a change is fetched once and reaches each with the
    /// same id.
    @Test(arguments: Adapter.available)
    func clientsOfOneRequestShareOneObservationAndOneFetchPerChange(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let url = "\(server.baseURL)/top/events"
                var streams: [EventStream] = []
                for _ in 0..<4 {
                    let stream = try await EventStream.open(url)
                    _ = try await stream.nextEvent()
                    streams.append(stream)
                }
                #expect(server.live.statistics.observations == 1)
                #expect(server.database.observationCount == 1)
                // Shared by the delivery engine: one subscription in the core for four clients.
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

    /// Clients of the same request in different scopes never share an
    /// observation.
    @Test(arguments: Adapter.available)
    func differentScopesNeverShare(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
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
