@testable import DBWatch
import DBWatchTestSupport
import Testing

/// The lifecycle of observations and of `LiveQuery` under load: request
/// changes, cancellation at each step, closing, and what stays behind.
@Suite("Observation and LiveQuery lifecycle")
struct ObservationLifecycleTests {
    /// Names by prefix; its fetches wait for `release` after opening
    /// `started` (on a connection thread, never a cooperative one).
    struct GatedSearch: Queryable {
        static let defaultValue: [String] = ["(loading)"]
        let prefix: String
        let started: Gate
        let release: Gate
        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.prefix == rhs.prefix && lhs.started === rhs.started && lhs.release === rhs.release
        }
        func hash(into hasher: inout Hasher) {
            hasher.combine(prefix)
            hasher.combine(ObjectIdentifier(started))
        }
        func fetch(_ db: Database) throws -> [String] {
            started.open()
            release.blockingWait()
            return try NameSearch(prefix: prefix).fetch(db)
        }
    }

    static func insert(_ names: String..., into database: any DatabaseWriter) async throws {
        try await database.write { db in
            for name in names { try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: [name]) }
        }
    }

    /// A configuration with `readers` readers and a close grace period.
    static func configuration(readers: Int, closeGracePeriod: Duration = .seconds(1)) -> Configuration {
        var configuration = Configuration()
        configuration.maximumReaderCount = readers
        configuration.closeGracePeriod = closeGracePeriod
        return configuration
    }

    // MARK: - LiveQuery

    /// A live query whose `run()` never started observes for its
    /// subscribers; when it goes away, it stops and their loops end.
    @Test func droppingALiveQueryThatNeverRanEndsItsSubscribers() async throws {
        let queue = try await makePlayerQueue()
        var live: LiveQuery<NameSearch>? = LiveQuery(NameSearch(prefix: "a"), in: queue)
        let recorder = ValueRecorder<[String]>()
        // The consumer holds its iterator only, as a `for await` loop does.
        let consumer = Task { [weak live] in
            guard var iterator = live?.values.makeAsyncIterator() else { return }
            while let names = await iterator.next() { recorder.append(names) }
        }
        try await recorder.wait { $0 == [[]] }  // fetched, never the default ["(loading)"]
        #expect(live?.subscriberCount == 1)
        #expect(queue.observationCount == 1)
        live = nil
        try await withTimeout(seconds: 20) { await consumer.value }
        #expect(recorder.values == [[]])
        try await waitUntil { queue.observationCount == 0 }
    }

    /// A second `run()` while one runs observes nothing itself: cancelling
    /// it returns at once and leaves the first running; cancelling the
    /// first ends both. (Both stored their observation in one slot, so
    /// cancelling either cancelled the other's, and the cancelled call
    /// waited forever.)
    @Test func aSecondRunWaitsForTheFirstAndCancelsAlone() async throws {
        let queue = try await makePlayerQueue()
        try await Self.insert("ann", into: queue)
        let live = LiveQuery(NameSearch(prefix: ""), in: queue)
        let first = Task { await live.run() }
        defer { first.cancel() }
        try await waitUntil { live.value == ["ann"] }

        let second = Task { await live.run() }
        try await waitUntil { live.state.withLock { $0.waiters.count } == 2 }
        second.cancel()
        try await withTimeout { await second.value }
        try await Self.insert("bob", into: queue)
        try await waitUntil { live.value == ["ann", "bob"] }

        let third = Task { await live.run() }
        try await waitUntil { live.state.withLock { $0.waiters.count } == 2 }
        first.cancel()
        try await withTimeout { await first.value }
        try await withTimeout { await third.value }
        #expect(live.subscriberCount == 0)
        try await waitUntil { queue.observationCount == 0 }
    }

    @Test func rapidRequestChangesEndOnTheLastRequestWithOneObservation() async throws {
        let queue = try await makePlayerQueue()
        try await Self.insert("al", "alan", "albert", "bob", "bea", into: queue)
        let live = LiveQuery(NameSearch(prefix: "a"), in: queue)
        let runner = Task { await live.run() }
        defer { runner.cancel() }
        let recorders = (0..<4).map { _ in ValueRecorder<[String]>() }
        let consumers = recorders.map { recorder in
            Task { for await names in live.values { recorder.append(names) } }
        }
        for recorder in recorders { try await recorder.wait { $0.last == ["al", "alan", "albert"] } }
        // Many changes in a row, some back to an earlier request; the last wins.
        let prefixes = ["b", "al", "ala", "be", "a", "alb", "bo", "", "al", "b"]
        for _ in 0..<20 {
            for prefix in prefixes { live.request = NameSearch(prefix: prefix) }
        }
        try await waitUntil { live.value == ["bea", "bob"] }
        for recorder in recorders { try await recorder.wait { $0.last == ["bea", "bob"] } }
        // One observation remains: the earlier ones were stopped.
        try await waitUntil { queue.observationCount == 1 }
        #expect(queue.statistics(for: NameSearch(prefix: "b")) != nil)
        #expect(live.error == nil)

        // An equal request changes nothing: no new observation, no refetch.
        let fetches = try #require(queue.statistics(for: NameSearch(prefix: "b"))).fetches
        live.request = NameSearch(prefix: "b")
        try await Self.insert("zed", into: queue)  // refetches "b" (a player row changed), same value
        try await waitUntil { queue.statistics(for: NameSearch(prefix: "b"))?.fetches == fetches + 1 }
        #expect(queue.observationCount == 1)

        // Later changes reach every subscriber once, in order.
        try await Self.insert("ben", into: queue)
        for recorder in recorders {
            try await recorder.wait { $0.last == ["bea", "ben", "bob"] }
            let values = recorder.values
            #expect(values.first == ["al", "alan", "albert"])
            #expect(values.suffix(2) == [["bea", "bob"], ["bea", "ben", "bob"]], "\(values)")
        }
        runner.cancel()
        for consumer in consumers { try await withTimeout { await consumer.value } }
        try await waitUntil { queue.observationCount == 0 }
        #expect(live.subscriberCount == 0)
    }

    /// The old request's fetch, still running when the request changes,
    /// finishes after the new request's value: `value` never goes back.
    @Test func aFetchOfTheOldRequestFinishingLateDoesNotReplaceTheNewValue() async throws {
        try await withPool(configuration: Self.configuration(readers: 2), schema: playerSchema) { pool in
            try await Self.insert("ann", "bob", into: pool)
            let started = Gate()
            let release = Gate()
            let old = GatedSearch(prefix: "a", started: started, release: release)
            // Another consumer of the old request keeps its observation running.
            let (other, otherTask) = record(pool.observe(old))
            defer { otherTask.cancel() }
            let live = LiveQuery(old, in: pool)
            let runner = Task { await live.run() }
            defer { runner.cancel() }
            let recorder = ValueRecorder<[String]>()
            let consumer = Task { for await names in live.values { recorder.append(names) } }
            defer { consumer.cancel() }
            try await withTimeout { await started.wait() }
            try await waitUntil { pool.observationCount == 1 && live.subscriberCount == 1 }

            live.request = GatedSearch(prefix: "b", started: Gate(), release: Gate.opened())
            try await recorder.wait { $0.last == ["bob"] }
            release.open()
            try await other.wait { $0.last?.value == ["ann"] }
            // A commit that changes both requests: only the new one counts.
            try await Self.insert("abe", "bea", into: pool)
            try await other.wait { $0.last?.value == ["abe", "ann"] }
            try await recorder.wait { $0.last == ["bea", "bob"] }
            #expect(live.value == ["bea", "bob"])
            // Never the default: the old request was not fetched before it changed.
            #expect(recorder.values == [["bob"], ["bea", "bob"]], "\(recorder.values)")
        }
    }

    /// An error of the old request stays only until the new request's first
    /// value, and a late error of the old request is never reported.
    @Test func anErrorOfTheOldRequestDoesNotOutliveTheNewRequestsValue() async throws {
        let queue = try await makePlayerQueue()
        try await Self.insert("ann", into: queue)
        let live = LiveQuery(SQLRequest("SELECT name FROM missing"), in: queue)
        let runner = Task { await live.run() }
        defer { runner.cancel() }
        try await waitUntil { live.error != nil }
        live.request = SQLRequest("SELECT name FROM player")
        try await waitUntil { live.value.count == 1 }
        #expect(live.error == nil)
        // Back to a good request from a failing one, and again.
        live.request = SQLRequest("SELECT name FROM missing")
        try await waitUntil { live.error != nil }
        #expect(live.value.count == 1)  // the last value stays
        live.request = SQLRequest("SELECT name FROM player WHERE name = 'ann'")
        try await waitUntil { live.error == nil }
        #expect(live.value.count == 1)
    }

    @Test func aRequestChangeThenAnImmediateCloseEndsRunAndSubscribers() async throws {
        for round in 0..<20 {
            let queue = try await makePlayerQueue()
            try await Self.insert("ann", "bob", into: queue)
            let live = LiveQuery(NameSearch(prefix: "a"), in: queue)
            let runner = Task { await live.run() }
            let recorder = ValueRecorder<[String]>()
            let consumer = Task { for await names in live.values { recorder.append(names) } }
            try await recorder.wait { $0.last == ["ann"] }
            live.request = NameSearch(prefix: round % 2 == 0 ? "b" : "")
            if round % 3 == 0 { live.request = NameSearch(prefix: "x") }
            await queue.close()
            try await withTimeout { await runner.value }
            try await withTimeout { await consumer.value }
            #expect((live.error as? SQLiteError)?.message == "database is closed")
            // The observation a subscriber started on demand ends with its
            // task, which the close ends but nobody awaits here.
            try await waitUntil { queue.observationCount == 0 }
            #expect(live.subscriberCount == 0)
            // A request change after the end starts nothing.
            live.request = NameSearch(prefix: "z")
            #expect(queue.observationCount == 0)
            let late = try await withTimeout { () async -> Int in
                var count = 0
                for await _ in live.values { count += 1 }
                return count
            }
            #expect(late == 1)
        }
    }

    @Test func subscribersComingAndGoingConcurrentlyLeaveNothing() async throws {
        let queue = try await makePlayerQueue()
        let live = LiveQuery(IntRequest("SELECT count(*) FROM player"), in: queue)
        let runner = Task { await live.run() }
        defer { runner.cancel() }
        try await waitUntil { queue.observationCount == 1 }
        let writer = Task {
            for index in 0..<100 {
                try await Self.insert("p\(index)", into: queue)
                if index % 10 == 0 {
                    // Another request with the same value.
                    live.request = IntRequest("SELECT count(*) + \(index) - \(index) FROM player")
                }
            }
        }
        var consumers: [Task<Void, Never>] = []
        for index in 0..<40 {
            consumers.append(
                Task {
                    var previous = -1
                    var received = 0
                    for await count in live.values {
                        #expect(count >= previous, "values go back: \(previous) then \(count)")
                        previous = count
                        received += 1
                        if received == 1 + index % 4 || count == 101 { break }
                    }
                })
            if index % 5 == 0 {
                // Cancelled before or while it waits.
                let cancelled = Task { for await _ in live.values {} }
                cancelled.cancel()
                consumers.append(cancelled)
            }
        }
        try await withTimeout { [consumers] in
            try await writer.value
            try await Self.insert("last", into: queue)
            for consumer in consumers { await consumer.value }
        }
        try await waitUntil { live.subscriberCount == 0 }
        try await waitUntil { live.value == 101 }
        #expect(queue.observationCount == 1)
        runner.cancel()
        try await withTimeout { await runner.value }
        try await waitUntil { queue.observationCount == 0 }
    }

    /// A subscriber that never reads holds one value, the newest.
    @Test func aLiveQuerySubscriberThatDoesNotReadGetsTheNewestValue() async throws {
        let queue = try await makePlayerQueue()
        let live = LiveQuery(IntRequest("SELECT count(*) FROM player"), in: queue)
        let runner = Task { await live.run() }
        defer { runner.cancel() }
        try await withTimeout { () async throws in
            var iterator = live.values.makeAsyncIterator()
            #expect(await iterator.next() == 0)
            for _ in 0..<50 {
                try await queue.write { db in
                    for _ in 0..<20 { try db.execute(sql: "INSERT INTO player (name) VALUES ('x')") }
                }
            }
            try await waitUntil { live.value == 1000 }
            // Handed under the same lock as `value`: one step gives the newest.
            #expect(await iterator.next() == 1000)
            try await Self.insert("y", into: queue)
            #expect(await iterator.next() == 1001)
        }
    }

    // MARK: - observe(_:)

    /// Cancelling before the first value, while sharing a fetch in flight,
    /// and between values: the other consumer is unaffected, and the
    /// observation count goes back to zero.
    @Test func cancellationAtEachStepWhileSharingAFetch() async throws {
        try await withPool(configuration: Self.configuration(readers: 2), schema: playerSchema) { pool in
            let started = Gate()
            let release = Gate()
            let request = GatedSearch(prefix: "", started: started, release: release)
            let (kept, keptTask) = record(pool.observe(request))
            defer { keptTask.cancel() }
            let (left, leftTask) = record(pool.observe(request))
            try await withTimeout { await started.wait() }
            #expect(pool.observationCount == 1)
            // Cancelled before its first value, the fetch in flight.
            leftTask.cancel()
            await leftTask.value
            #expect(left.values.isEmpty)
            #expect(pool.observationCount == 1)
            release.open()
            try await kept.wait { $0.last?.value == [] }
            // Between values.
            let (between, betweenTask) = record(pool.observe(request))
            try await between.wait(forCount: 1)
            betweenTask.cancel()
            await betweenTask.value
            try await Self.insert("ann", into: pool)
            try await kept.wait { $0.last?.value == ["ann"] }
            #expect(between.values.count == 1)
            #expect(pool.statistics(for: request)?.fetches == 2)
            keptTask.cancel()
            await keptTask.value
            try await waitUntil { pool.observationCount == 0 }
        }
    }

    /// Reads `player`; once it has rows, opens `started` and runs a query
    /// that never ends on its own.
    struct EndlessOnceFilled: Queryable {
        static let defaultValue = 0
        let started: Gate
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.started === rhs.started }
        func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(started)) }
        func fetch(_ db: Database) throws -> Int {
            let count = try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") ?? 0
            guard count > 0 else { return 0 }
            started.open()
            let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
            return try db.fetchOne(Int.self, sql: endless) ?? 0
        }
    }

    /// The refetches of one commit run in one batch on one reader: the
    /// consumer of one of them leaving interrupts its fetch only, and the
    /// others in the batch still deliver.
    @Test func cancellingOneFetchOfABatchLeavesTheOthers() async throws {
        try await withPool(configuration: Self.configuration(readers: 1), schema: playerSchema) { pool in
            let started = Gate()
            let (names, namesTask) = record(pool.observe(PlayerNames()))
            defer { namesTask.cancel() }
            let (all, allTask) = record(pool.observe(AllPlayers()))
            defer { allTask.cancel() }
            let (endless, endlessTask) = record(pool.observe(EndlessOnceFilled(started: started)))
            try await names.wait(forCount: 1)
            try await all.wait(forCount: 1)
            try await endless.wait(forCount: 1)
            try await Self.insert("ann", into: pool)
            try await withTimeout { await started.wait() }
            endlessTask.cancel()
            await endlessTask.value
            try await names.wait { $0.last?.value == ["ann"] }
            try await all.wait { $0.last?.value?.map(\.name) == ["ann"] }
            #expect(endless.values.count == 1)
            let one = try await withTimeout { try await pool.read { db in try db.fetchOne(Int.self, sql: "SELECT 1") } }
            #expect(one == 1)
            #expect(pool.observationCount == 2)
            try await Self.insert("bob", into: pool)
            try await names.wait { $0.last?.value == ["ann", "bob"] }
        }
    }

    /// (Within the grace period, long here: the fetch waits for the test.)
    @Test func closingAPoolWhileAFetchIsInFlightEndsTheObservation() async throws {
        let configuration = Self.configuration(readers: 1, closeGracePeriod: .seconds(60))
        try await withPool(configuration: configuration, schema: playerSchema) { pool in
            let started = Gate()
            let release = Gate()
            let (recorder, task) = record(pool.observe(GatedSearch(prefix: "", started: started, release: release)))
            try await withTimeout { await started.wait() }
            // close() waits for the reader: on a thread of its own.
            let closing = Task(executorPreference: DedicatedThreadExecutor()) { pool.syncClose() }
            try await waitUntil { pool.readerJobs.closed }
            release.open()
            try await withTimeout { await closing.value }
            try await withTimeout { await task.value }
            #expect(recorder.values.first?.value == [], "\(recorder.values)")
            if case .failure(let error)? = recorder.values.last {
                #expect((error as? SQLiteError)?.message == "database is closed")
            } else {
                Issue.record("the last element is not the close error: \(recorder.values)")
            }
            #expect(pool.observationCount == 0)
        }
    }

    // MARK: - Rate limit

    /// A rate-limited observation cancelled while its changes wait for the
    /// interval leaves no timer behind (it kept the observation alive until
    /// the interval passed).
    @Test func cancellingARateLimitedObservationMidIntervalStopsItsTimer() async throws {
        let queue = try await makePlayerQueue()
        let clock = TestClock()
        let options = ObservationOptions(minimumInterval: .seconds(3600), clock: clock)
        let recorder = ValueRecorder<Int>()
        let consumer = Task {
            for try await count in queue.observe(IntRequest("SELECT count(*) FROM player"), options: options) {
                recorder.append(count)
            }
        }
        try await recorder.wait { $0 == [0] }
        try await Self.insert("x", into: queue)
        try await waitUntil { clock.sleeperCount == 1 }
        consumer.cancel()
        _ = await consumer.result
        #expect(queue.observationCount == 0)
        try await waitUntil(seconds: 20) { clock.sleeperCount == 0 }
        clock.advance(by: .seconds(3600))
        #expect(recorder.values == [0])
    }

    /// Rate-limited observations of one request with equal options share
    /// one driver: one fetch per change and one timer for all of them.
    @Test func rateLimitedObservationsOfOneRequestShareOneDriver() async throws {
        let queue = try await makePlayerQueue()
        let clock = TestClock()
        let options = ObservationOptions(minimumInterval: .seconds(1), clock: clock)
        let request = IntRequest("SELECT count(*) FROM player")
        let observers = (0..<5).map { _ in record(queue.observe(request, options: options)) }
        defer { for (_, task) in observers { task.cancel() } }
        for (recorder, _) in observers { try await recorder.wait { $0.compactMap(\.value) == [0] } }
        #expect(queue.observationCount == 1)
        #expect(queue.subscriberCount == 5)
        #expect(queue.observations.statistics(for: request, options: options)?.fetches == 1)

        // Within the interval: one timer waits for all of them.
        try await Self.insert("x", "y", into: queue)
        try await waitUntil { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(1))
        for (recorder, _) in observers { try await recorder.wait { $0.compactMap(\.value) == [0, 2] } }
        #expect(queue.observations.statistics(for: request, options: options)?.fetches == 2)

        // Another interval, or another clock, is another observation.
        let other = record(
            queue.observe(request, options: ObservationOptions(minimumInterval: .seconds(2), clock: clock)))
        defer { other.1.cancel() }
        let third = record(queue.observe(request, options: ObservationOptions(minimumInterval: .seconds(1))))
        defer { third.1.cancel() }
        try await other.0.wait(forCount: 1)
        try await third.0.wait(forCount: 1)
        #expect(queue.observationCount == 3)
    }

    /// A subscriber joining a shared rate-limited observation while a
    /// change waits for the interval gets its first value at once, fetched
    /// for it; the others still wait, and it does not get that value twice.
    @Test func aLateSubscriberOfARateLimitedObservationIsNotDelayed() async throws {
        let queue = try await makePlayerQueue()
        let clock = TestClock()
        let options = ObservationOptions(minimumInterval: .seconds(3600), clock: clock)
        let request = IntRequest("SELECT count(*) FROM player")
        let (first, firstTask) = record(queue.observe(request, options: options))
        defer { firstTask.cancel() }
        try await first.wait { $0.compactMap(\.value) == [0] }
        try await Self.insert("x", into: queue)
        try await waitUntil { clock.sleeperCount == 1 }

        // The clock does not move: the late subscriber's value cannot come from the timer.
        let (late, lateTask) = record(queue.observe(request, options: options))
        defer { lateTask.cancel() }
        try await late.wait { $0.compactMap(\.value) == [1] }
        let (later, laterTask) = record(queue.observe(request, options: options))
        defer { laterTask.cancel() }
        try await later.wait { $0.compactMap(\.value) == [1] }
        #expect(first.values.compactMap(\.value) == [0])
        #expect(queue.observationCount == 1)
        // The second late subscriber got the first one's value, unchanged since.
        #expect(queue.observations.statistics(for: request, options: options)?.fetches == 2)

        // At the interval, the first subscriber gets the change; the late
        // ones already have it.
        try await waitUntil { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(3600))
        try await first.wait { $0.compactMap(\.value) == [0, 1] }
        try await Self.insert("y", into: queue)
        try await waitUntil { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(3600))
        for recorder in [first, late, later] { try await recorder.wait { $0.last?.value == 2 } }
        #expect(late.values.compactMap(\.value) == [1, 2])
        #expect(later.values.compactMap(\.value) == [1, 2])
        #expect(first.values.compactMap(\.value) == [0, 1, 2])
    }

    @Test func closingMidIntervalEndsARateLimitedObservationAndItsTimer() async throws {
        let queue = try await makePlayerQueue()
        let clock = TestClock()
        let options = ObservationOptions(minimumInterval: .seconds(1), clock: clock)
        let (recorder, task) = record(queue.observe(IntRequest("SELECT count(*) FROM player"), options: options))
        try await recorder.wait(forCount: 1)
        try await Self.insert("x", into: queue)
        try await waitUntil { clock.sleeperCount == 1 }
        await queue.close()
        try await withTimeout { await task.value }
        // The change waiting for the interval was never fetched; the close error ends it.
        #expect(recorder.values.count == 2)
        #expect(recorder.values.first?.value == 0)
        #expect(queue.observationCount == 0)
        try await waitUntil(seconds: 20) { clock.sleeperCount == 0 }
    }
}

extension Gate {
    static func opened() -> Gate {
        let gate = Gate()
        gate.open()
        return gate
    }
}
