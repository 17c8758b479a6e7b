import DBWatch
import DBWatchTestSupport
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

/// `LiveQuery` for servers: subscribers see fetched values only, errors
/// when they ask, observe on demand without `run()`, and end on `finish()`.
@Suite("LiveQuery subscribers: fetched values, results, on demand, finish")
struct LiveQuerySubscriberTests {
    /// Names by prefix, whose fetches wait for `release` (on a connection
    /// thread, never a cooperative one); `["(loading)"]` before a fetch.
    struct GatedNames: Queryable {
        static let defaultValue: [String] = ["(loading)"]
        let release: Gate
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.release === rhs.release }
        func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(release)) }
        func fetch(_ db: Database) throws -> [String] {
            release.blockingWait()
            return try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY name")
        }
    }

    static func open(_ kind: DatabaseKind, in directory: TemporaryDirectory) async throws -> any DatabaseWriter {
        let database = try kind.open(in: directory)
        try await database.write { db in try db.execute(sql: playerSchema) }
        return database
    }

    static func insert(_ names: String..., into database: any DatabaseWriter) async throws {
        try await database.write { db in
            for name in names { try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: [name]) }
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool, [false, true])
    func aSubscriberBeforeTheFirstFetchWaitsForIt(kind: DatabaseKind, running: Bool) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            try await Self.insert("ann", into: database)
            let release = Gate()
            let live = LiveQuery(GatedNames(release: release), in: database)
            let runner = running ? Task { await live.run() } : nil
            defer { runner?.cancel() }
            let values = ValueRecorder<[String]>()
            let results = ValueRecorder<Result<[String], any Error>>()
            let consumers = [
                Task { for await names in live.values { values.append(names) } },
                Task { for await result in live.results { results.append(result) } },
            ]
            defer { for consumer in consumers { consumer.cancel() } }
            // Both subscribed, the first fetch runs: nothing delivered yet.
            try await waitUntil { live.subscriberCount == 2 && database.observationCount == 1 }
            #expect(live.value == ["(loading)"])
            #expect(live.fetchedValue == nil)
            #expect(values.values.isEmpty && results.values.isEmpty)
            release.open()
            try await values.wait { $0 == [["ann"]] }
            try await results.wait { $0.count == 1 }
            #expect(results.values.first?.value == ["ann"])
            #expect(live.fetchedValue == ["ann"])
            // A subscriber joining now gets the fetched value at once.
            let late = try await withTimeout { () async -> [String]? in
                var iterator = live.values.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(late == ["ann"])
        }
    }

    /// A fetched value equal to `defaultValue` is delivered: it is a fact.
    @Test(arguments: DatabaseKind.queueAndPool)
    func aFetchedValueEqualToTheDefaultIsDelivered(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let live = LiveQuery(IntRequest("SELECT count(*) FROM player"), in: database)
            #expect(live.fetchedValue == nil)
            let first = try await withTimeout { () async -> Int? in
                for await count in live.values { return count }
                return nil
            }
            #expect(first == 0)
            #expect(live.fetchedValue == 0)
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func resultsDeliverErrorsAndRecoveryValuesSkipThem(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let live = LiveQuery(IntRequest("SELECT count(*) FROM missing"), in: database)
            let values = ValueRecorder<Int>()
            let results = ValueRecorder<Result<Int, any Error>>()
            let consumers = [
                Task { for await count in live.values { values.append(count) } },
                Task { for await result in live.results { results.append(result) } },
            ]
            try await results.wait(forCount: 1)
            #expect(results.values[0].value == nil)
            #expect(live.error != nil && live.fetchedValue == nil)

            try await database.write { db in try db.execute(sql: "CREATE TABLE missing (a)") }
            try await results.wait { $0.count == 2 }
            try await database.write { db in try db.execute(sql: "INSERT INTO missing VALUES (1)") }
            try await results.wait { $0.count == 3 }
            try await database.write { db in try db.execute(sql: "DROP TABLE missing") }
            try await results.wait { $0.count == 4 }
            // Recovering to a value equal to the last one: results say so, values do not repeat it.
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE missing (a); INSERT INTO missing VALUES (1)")
            }
            try await results.wait { $0.count == 5 }
            #expect(results.values.map(\.value) == [nil, 0, 1, nil, 1])
            #expect(values.values == [0, 1])
            #expect(live.error == nil && live.value == 1)

            // A subscriber joining while fetches fail gets the error at once.
            try await database.write { db in try db.execute(sql: "DROP TABLE missing") }
            try await results.wait { $0.count == 6 }
            let late = try await withTimeout { () async -> Result<Int, any Error>? in
                var iterator = live.results.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(late?.value == nil && late != nil)

            // finish() ends both loops, the values one waiting for a value.
            live.finish()
            try await withTimeout { for consumer in consumers { await consumer.value } }
            #expect(live.subscriberCount == 0)
            try await waitUntil { database.observationCount == 0 }
        }
    }

    /// Without `run()`, the live query observes while it has subscribers:
    /// the last one leaving stops it, and a new one starts it again with a
    /// fresh value, never the one held from before.
    @Test(arguments: DatabaseKind.queueAndPool)
    func withoutRunItObservesWhileItHasSubscribers(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            try await Self.insert("ann", into: database)
            let live = LiveQuery(PlayerNames(), in: database)
            #expect(database.observationCount == 0)
            let recorder = ValueRecorder<[String]>()
            let consumer = Task { for await names in live.values { recorder.append(names) } }
            try await recorder.wait { $0 == [["ann"]] }
            try await Self.insert("bob", into: database)
            try await recorder.wait { $0.last == ["ann", "bob"] }
            consumer.cancel()
            try await waitUntil { database.observationCount == 0 && live.subscriberCount == 0 }

            // Not observed meanwhile: the next subscriber waits for a fresh fetch.
            try await Self.insert("cat", into: database)
            #expect(live.value == ["ann", "bob"])
            let first = try await withTimeout { () async -> [String]? in
                for await names in live.values { return names }
                return nil
            }
            #expect(first == ["ann", "bob", "cat"])
            try await waitUntil { database.observationCount == 0 }

            // A request change while nobody observes starts nothing.
            live.request = PlayerNames()
            #expect(database.observationCount == 0)
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func finishEndsRunAndSubscribersAndRunStartsAgain(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            try await Self.insert("ann", into: database)
            let live = LiveQuery(PlayerNames(), in: database)
            let runner = Task { await live.run() }
            let recorder = ValueRecorder<[String]>()
            let consumers = (0..<3).map { _ in Task { for await names in live.values { recorder.append(names) } } }
            try await recorder.wait { $0.count == 3 }
            try await waitUntil { live.subscriberCount == 3 }
            live.finish()
            try await withTimeout { await runner.value }
            try await withTimeout { for consumer in consumers { await consumer.value } }
            #expect(live.subscriberCount == 0)
            try await waitUntil { database.observationCount == 0 }
            // Ended: a subscriber gets the last value and the end, and observes nothing.
            let late = try await withTimeout { () async -> [[String]] in
                var received: [[String]] = []
                for await names in live.values { received.append(names) }
                return received
            }
            #expect(late == [["ann"]])
            #expect(database.observationCount == 0)
            live.finish()  // idempotent

            // run() starts it again.
            let again = Task { await live.run() }
            try await Self.insert("bob", into: database)
            try await waitUntil { live.value == ["ann", "bob"] }
            again.cancel()
            try await withTimeout { await again.value }
            try await waitUntil { database.observationCount == 0 }
        }
    }

    /// `finish()` before anything ran: subscribers never wait, and get no default.
    @Test func finishBeforeAnyFetchEndsSubscribersWithNothing() async throws {
        let queue = try await makePlayerQueue()
        let live = LiveQuery(NameSearch(prefix: ""), in: queue)
        live.finish()
        let received = try await withTimeout { () async -> [[String]] in
            var received: [[String]] = []
            for await names in live.values { received.append(names) }
            return received
        }
        #expect(received.isEmpty)
        #expect(queue.observationCount == 0)
    }

    /// A database that closes ends subscribers of a live query that never
    /// ran; the results form ends with the closed error.
    @Test(arguments: DatabaseKind.queueAndPool)
    func closingTheDatabaseEndsOnDemandSubscribers(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let live = LiveQuery(PlayerNames(), in: database)
            let values = ValueRecorder<[String]>()
            let results = ValueRecorder<Result<[String], any Error>>()
            let consumers = [
                Task { for await names in live.values { values.append(names) } },
                Task { for await result in live.results { results.append(result) } },
            ]
            try await values.wait(forCount: 1)
            try await results.wait(forCount: 1)
            await database.close()
            try await withTimeout { for consumer in consumers { await consumer.value } }
            #expect(values.values == [[]])
            let last = try #require(results.values.last)
            if case .failure(let error as SQLiteError) = last {
                #expect(error.isDatabaseClosed)
            } else {
                Issue.record("expected the closed error last: \(results.values)")
            }
            #expect((live.error as? SQLiteError)?.isDatabaseClosed == true)
        }
    }
}
