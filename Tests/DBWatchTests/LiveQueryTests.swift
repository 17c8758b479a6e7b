import DBWatch
import Testing

@Suite("LiveQuery, rate limit, explain")
struct LiveQueryTests {
    @Test func liveQueryHoldsDefaultThenValuesAndSwitchesRequest() async throws {
        let queue = try await makePlayerQueue()
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO player (name) VALUES ('alice'), ('bob'), ('albert')")
        }
        let live = LiveQuery(NameSearch(prefix: "al"), in: queue)
        #expect(live.value == ["(loading)"])
        let runner = Task { await live.run() }
        defer { runner.cancel() }
        let first = ValueRecorder<[String]>()
        let second = ValueRecorder<[String]>()
        let consumers = [first, second].map { recorder in
            Task { for await names in live.values { recorder.append(names) } }
        }
        try await first.wait { $0.last == ["albert", "alice"] }
        try await second.wait { $0.last == ["albert", "alice"] }
        #expect(live.value == ["albert", "alice"])
        try await waitUntil { live.subscriberCount == 2 }

        // A new request: subscribers keep their loop and see its values.
        live.request = NameSearch(prefix: "b")
        try await first.wait { $0.last == ["bob"] }
        try await second.wait { $0.last == ["bob"] }
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('bea')") }
        try await first.wait { $0.last == ["bea", "bob"] }
        // One observation runs for all subscribers.
        #expect(queue.observationCount == 1)
        #expect(queue.statistics(for: NameSearch(prefix: "b"))?.fetches == 2)

        runner.cancel()
        for consumer in consumers { await consumer.value }  // the values end with run()
        try await waitUntil { queue.observationCount == 0 }
    }

    @Test func liveQueryRunEndsWhenTheDatabaseCloses() async throws {
        let queue = try await makePlayerQueue()
        let live = LiveQuery(NameSearch(prefix: "a"), in: queue)
        let runner = Task { await live.run() }
        defer { runner.cancel() }
        let recorder = ValueRecorder<[String]>()
        let consumer = Task { for await names in live.values { recorder.append(names) } }
        try await waitUntil { live.subscriberCount == 1 && queue.observationCount == 1 }
        try await recorder.wait { $0.last == [] }
        await queue.close()
        // run() returns, the subscribers' loops end, and the error says why.
        try await withTimeout { await runner.value }
        try await withTimeout { await consumer.value }
        #expect((live.error as? SQLiteError)?.message == "database is closed")
        #expect(live.value == [])
        #expect(queue.observationCount == 0)
    }

    @Test func subscribingAfterRunEndedGivesTheLastValueThenTheEnd() async throws {
        let queue = try await makePlayerQueue()
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('ann')") }
        let live = LiveQuery(NameSearch(prefix: "a"), in: queue)
        let runner = Task { await live.run() }
        try await waitUntil { live.value == ["ann"] }
        runner.cancel()
        await runner.value
        let received = try await withTimeout { () async -> [[String]] in
            var received: [[String]] = []
            for await names in live.values { received.append(names) }
            return received
        }
        #expect(received == [["ann"]])
        #expect(live.subscriberCount == 0)
    }

    @Test func anEqualValueAfterARequestChangeIsNotDeliveredAgain() async throws {
        let queue = try await makePlayerQueue()
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('ann'), ('bob')") }
        let live = LiveQuery(NameSearch(prefix: "a"), in: queue)
        let runner = Task { await live.run() }
        defer { runner.cancel() }
        let recorder = ValueRecorder<[String]>()
        let consumer = Task { for await names in live.values { recorder.append(names) } }
        defer { consumer.cancel() }
        try await recorder.wait { $0.last == ["ann"] }
        // "an" finds the same rows: its first value is not delivered again,
        // and its next one is.
        live.request = NameSearch(prefix: "an")
        try await waitUntil { queue.statistics(for: NameSearch(prefix: "an"))?.fetches == 1 }
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('anna')") }
        try await recorder.wait { $0.last == ["ann", "anna"] }
        #expect(recorder.values.filter { $0 == ["ann"] }.count == 1, "\(recorder.values)")
    }

    @Test func liveQueryKeepsLatestError() async throws {
        let queue = try DatabaseQueue()
        let live = LiveQuery(IntRequest("SELECT count(*) FROM missing"), in: queue)
        let runner = Task { await live.run() }
        defer { runner.cancel() }
        try await waitUntil { live.error != nil }
        #expect(live.value == 0)
        try await queue.write { db in try db.execute(sql: "CREATE TABLE missing (a); INSERT INTO missing VALUES (1)") }
        try await waitUntil { live.value == 1 && live.error == nil }
    }

    @Test func rateLimitCoalescesBetweenIntervals() async throws {
        let queue = try await makePlayerQueue()
        let clock = TestClock()
        let request = IntRequest("SELECT count(*) FROM player")
        let options = ObservationOptions(minimumInterval: .seconds(1), clock: clock)
        let recorder = ValueRecorder<Int>()
        let consumer = Task {
            for try await count in queue.observe(request, options: options) { recorder.append(count) }
        }
        defer { consumer.cancel() }
        try await recorder.wait { $0 == [0] }
        for _ in 0..<10 {
            try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('x')") }
        }
        // The changes wait for the interval: a timer sleeps on the clock.
        try await waitUntil { clock.sleeperCount == 1 }
        #expect(recorder.values == [0])
        clock.advance(by: .seconds(1))
        try await recorder.wait { $0 == [0, 10] }
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('y')") }
        try await waitUntil { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(1))
        try await recorder.wait { $0 == [0, 10, 11] }
    }

    @Test func rateLimitIsOffByDefault() async throws {
        let queue = try await makePlayerQueue()
        let (recorder, task) = record(queue.observe(IntRequest("SELECT count(*) FROM player")))
        defer { task.cancel() }
        try await recorder.wait(forCount: 1)
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('x')") }
        try await recorder.wait { $0.last?.value == 1 }
    }

    @Test func explainTellsTablesAndColumns() async throws {
        let queue = try await makePlayerQueue()
        let explanation = try await queue.explain(PlayerNames())
        #expect(explanation.region.description == "main.player(id, name)")
        #expect(explanation.statistics == nil)
        #expect(explanation.description == "Observes main.player: columns id, name.")
        let counting = try await queue.explain(IntRequest("SELECT count(*) FROM player"))
        #expect(counting.description == "Observes main.player: which rows exist (inserts and deletes), no column.")
        let (recorder, task) = record(queue.observe(PlayerNames()))
        defer { task.cancel() }
        try await recorder.wait(forCount: 1)
        let running = try await queue.explain(PlayerNames())
        #expect(running.statistics?.fetches == 1)
    }
}
