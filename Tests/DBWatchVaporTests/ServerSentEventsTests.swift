#if Vapor
    import AsyncHTTPClient
    import DBWatch
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    import DBWatchVapor
    import Testing

    @Suite("Vapor: server-sent events")
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

        @Test func valueThatWritesItsOwnJSONIsServedAsWritten() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    let current = try await fetch("\(server.baseURL)/hand")
                    #expect(current.status == 200)
                    #expect(current.body == #"[["arthur",100],["barbara",80]]"#)
                    let stream = try await EventStream.open("\(server.baseURL)/hand/events")
                    #expect(try await stream.nextEvent().data == #"[["arthur",100],["barbara",80]]"#)
                    _ = try await fetch("\(server.baseURL)/players/carol/90", method: "POST")
                    #expect(
                        try await stream.nextEvent().data == #"[["arthur",100],["carol",90],["barbara",80]]"#)
                }
            }
        }

        @Test func failingFetchIsAnErrorEventAndTheStreamRecovers() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    let stream = try await EventStream.open("\(server.baseURL)/checked/events")
                    #expect(try await stream.nextEvent().decode([Player].self).count == 2)

                    try await server.database.write { db in try db.execute(sql: "UPDATE control SET fail = 1") }
                    let error = try await stream.nextEvent()
                    #expect(error.event == "error")
                    #expect(error.id == nil)
                    #expect(
                        try error.decode(ErrorJSON.self) == ErrorJSON(message: "no such table: missing_table", code: 1))

                    try await server.database.write { db in
                        try db.execute(sql: "UPDATE control SET fail = 0; INSERT INTO player VALUES ('carol', 1)")
                    }
                    let recovered = try await stream.nextEvent()
                    #expect(recovered.event == nil)
                    #expect(try recovered.decode([Player].self).map(\.name) == ["arthur", "barbara", "carol"])
                    #expect(server.live.statistics.errorsSent == 1)
                }
            }
        }

        @Test func resumeWithLastEventIDSendsNoDuplicate() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    let url = "\(server.baseURL)/top/events"
                    let holder = try await EventStream.open(url)
                    let heldID = try #require(try await holder.nextEvent().id)

                    // The resumed client gets nothing until the value changes, then the new value.
                    let resumed = try await EventStream.open(url, lastEventID: heldID)
                    try await waitUntil { server.live.statistics.clientsConnected == 2 }
                    _ = try await fetch("\(server.baseURL)/players/carol/90", method: "POST")
                    let changed = try await resumed.nextEvent()
                    #expect(try changed.decode([Player].self).map(\.name) == ["arthur", "carol", "barbara"])
                    #expect(try await holder.nextEvent().id == changed.id)

                    // One that missed a value gets the current one at once.
                    let missed = try await EventStream.open(url, lastEventID: heldID)
                    #expect(try await missed.nextEvent().id == changed.id)
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
#endif
