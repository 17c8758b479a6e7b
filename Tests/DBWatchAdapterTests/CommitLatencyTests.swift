import DBWatch
import DBWatchServerTestSupport
import DBWatchTestSupport
import Testing

/// `LiveQueriesStatistics.commitToSocket` on every adapter: one duration
/// per client and value that is news of a commit, from the commit's
/// publication to the end of the write to that client; never a client's
/// first value, nor a value whose commit came before the client followed
/// its request.
@Suite("Commit-to-socket latency, on every adapter")
struct CommitLatencyTests {
    private func addPlayer(_ server: any AdapterServer, _ name: String, _ score: Int) async throws {
        try await server.database.write { db in
            try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: [name, score])
        }
    }

    /// Server-sent events: two clients, a commit, two durations, each no
    /// longer than the time from before the commit to after the count.
    @Test(arguments: Adapter.available)
    func eachClientsValueAfterACommitCountsOnceAndItsFirstValueNever(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let first = try await EventStream.open("\(server.baseURL)/top/events")
                let second = try await EventStream.open("\(server.baseURL)/top/events")
                _ = try await first.nextEvent()
                _ = try await second.nextEvent()
                // A write is counted before its value is: both first values are done.
                try await waitUntil { server.live.statistics.valuesSent >= 2 }
                #expect(server.live.statistics.commitToSocket.count == 0)

                let beforeCommit = ContinuousClock.now
                try await addPlayer(server, "carol", 90)
                _ = try await first.nextEvent()
                _ = try await second.nextEvent()
                try await waitUntil { server.live.statistics.commitToSocket.count >= 2 }
                let elapsed = beforeCommit.duration(to: .now)
                let latency = server.live.statistics.commitToSocket
                #expect(latency.count == 2)
                #expect(latency.total > .zero)
                #expect(latency.total <= elapsed * 2)

                // A later client: the current value is not news of a commit for it.
                let third = try await EventStream.open("\(server.baseURL)/top/events")
                _ = try await third.nextEvent()
                try await addPlayer(server, "dave", 95)
                for stream in [first, second, third] { _ = try await stream.nextEvent() }
                // Each write is counted, then its value sent: wait for both.
                try await waitUntil {
                    server.live.statistics.commitToSocket.count >= 5 && server.live.statistics.valuesSent >= 8
                }
                #expect(server.live.statistics.commitToSocket.count == 5)
                #expect(server.live.statistics.valuesSent == 8)
            }
        }
    }

    /// A WebSocket client that changes its request follows the new one
    /// from then on: the value it is given at once, though made after the
    /// socket opened, is no commit's news for it.
    @Test(arguments: Adapter.available)
    func aValueGivenForANewRequestOnASocketDoesNotCount(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let watcher = try await EventStream.open("\(server.baseURL)/top/events?limit=3")
                _ = try await watcher.nextEvent()
                try await TestWebSocket.connect("ws://127.0.0.1:\(server.port)/top/socket") { socket in
                    try await socket.send(#"{"limit":1}"#)
                    _ = try await socket.nextText()
                    // Carol enters the watcher's top 3, not the socket's top 1.
                    try await addPlayer(server, "carol", 90)
                    try await waitUntil { server.live.statistics.valuesSent >= 3 }
                    #expect(server.live.statistics.commitToSocket.count == 1)

                    // The socket now asks for the top 3: the watcher's current value, at once.
                    try await socket.send(#"{"limit":3}"#)
                    #expect(try await socket.nextText()?.contains("carol") == true)
                    try await waitUntil { server.live.statistics.valuesSent >= 4 }
                    #expect(server.live.statistics.commitToSocket.count == 1)
                    try await socket.close()
                }
            }
        }
    }

    /// The sync protocol: a batch of changes after a commit counts once,
    /// the batch of a new subscription's snapshot never.
    @Test(arguments: Adapter.available)
    func aSyncBatchOfChangesCountsAndASnapshotNever(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let client = try await SyncTestClient.connect(server.baseURL)
                try await client.subscribe("top", to: "top", params: ["n": "3"])
                #expect(try await client.next().changes["top"]?["kind"] as? String == "snapshot")
                // A batch is counted before the write loop goes on (and counts a value sent).
                try await waitUntil { server.live.statistics.valuesSent >= 1 }
                #expect(server.live.statistics.commitToSocket.count == 0)

                let beforeCommit = ContinuousClock.now
                try await addPlayer(server, "carol", 90)
                #expect(try await client.next().changes["top"]?["kind"] as? String == "changes")
                try await waitUntil { server.live.statistics.commitToSocket.count >= 1 }
                let latency = server.live.statistics.commitToSocket
                #expect(latency.count == 1)
                #expect(latency.total <= beforeCommit.duration(to: .now))

                // A second subscription after a commit: its snapshot alone is no news.
                try await addPlayer(server, "dave", 10)  // below the top 3: no batch
                try await client.subscribe("count", to: "count")
                #expect(try await client.next().changes["count"]?["kind"] as? String == "value")
                // The loop writes the next message only after counting this one.
                #expect(try await client.subscribe("x", to: "nope") == 404)
                #expect(try await client.next().type == "error")
                #expect(server.live.statistics.commitToSocket.count == 1)
                try await addPlayer(server, "erin", 95)
                let batch = try await client.next()
                #expect(batch.changes["top"]?["kind"] as? String == "changes")
                try await waitUntil { server.live.statistics.commitToSocket.count >= 2 }
                #expect(server.live.statistics.commitToSocket.count == 2)
            }
        }
    }
}
