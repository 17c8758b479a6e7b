@testable import DBWatch
import Testing

/// The lifecycle of observations and of `LiveQuery` under load: request
/// changes, cancellation at each step, closing, and what stays behind.
@Suite("Observation and LiveQuery lifecycle")
struct LifecycleReviewTests {
    struct Search: Queryable {
        static let defaultValue: [String] = ["(loading)"]
        var prefix: String
        func fetch(_ db: Database) throws -> [String] {
            try db.fetchAll(
                String.self, sql: "SELECT name FROM player WHERE name LIKE ? || '%' ORDER BY name", arguments: [prefix])
        }
    }

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
            return try Search(prefix: prefix).fetch(db)
        }
    }

    static func insert(_ names: String..., into database: any DatabaseWriter) async throws {
        try await database.write { db in
            for name in names { try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: [name]) }
        }
    }

    static func withPool(readers: Int = 2, _ body: (DatabasePool) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            var configuration = Configuration()
            configuration.maximumReaderCount = readers
            let pool = try DatabasePool(path: directory.file("db.sqlite"), configuration: configuration)
            defer { pool.close() }
            try await pool.write { db in try db.execute(sql: playerSchema) }
            try await body(pool)
        }
    }

    // MARK: - LiveQuery

    /// A live query whose `run()` never started holds its subscribers'
    /// loops; when it goes away, nothing could ever wake them again.
    @Test func droppingALiveQueryThatNeverRanEndsItsSubscribers() async throws {
        let queue = try await makePlayerQueue()
        var live: LiveQuery<Search>? = LiveQuery(Search(prefix: "a"), in: queue)
        let recorder = ValueRecorder<[String]>()
        // The consumer holds its iterator only, as a `for await` loop does.
        let consumer = Task { [weak live] in
            guard var iterator = live?.values.makeAsyncIterator() else { return }
            while let names = await iterator.next() { recorder.append(names) }
        }
        try await recorder.wait { $0 == [["(loading)"]] }
        #expect(live?.subscriberCount == 1)  // registered before it got its first value
        live = nil
        try await withTimeout(seconds: 20) { await consumer.value }
        #expect(recorder.values == [["(loading)"]])
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

    @Test func closingMidIntervalEndsARateLimitedObservationAndItsTimer() async throws {
        let queue = try await makePlayerQueue()
        let clock = TestClock()
        let options = ObservationOptions(minimumInterval: .seconds(1), clock: clock)
        let (recorder, task) = record(queue.observe(IntRequest("SELECT count(*) FROM player"), options: options))
        try await recorder.wait(forCount: 1)
        try await Self.insert("x", into: queue)
        try await waitUntil { clock.sleeperCount == 1 }
        queue.close()
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
