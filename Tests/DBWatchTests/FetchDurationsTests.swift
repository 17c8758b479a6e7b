import DBWatchTestSupport
import Testing

@testable import DBWatch

/// The fetch durations a database counts for the metrics backends: each
/// observation fetch in its bucket, nothing else.
@Suite("Fetch durations: buckets per database")
struct FetchDurationsTests {
    @Test func aDurationGoesToTheFirstBucketWhoseBoundItDoesNotExceed() {
        let counters = DurationHistogramCounters()
        counters.record(.zero)
        counters.record(.microseconds(500))  // the first bound, inclusive
        counters.record(.nanoseconds(500_001))
        counters.record(.milliseconds(3))
        counters.record(.seconds(11))
        let durations = counters.snapshot
        #expect(durations.buckets.count == FetchDurations.upperBounds.count + 1)
        #expect(durations.buckets.map(\.upperBound).dropLast() == FetchDurations.upperBounds.map(Optional.some))
        #expect(durations.buckets.last?.upperBound == nil)
        #expect(durations.buckets.map(\.count) == [2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
        #expect(durations.buckets[0].total == .microseconds(500))
        #expect(durations.buckets[1].total == .nanoseconds(500_001))
        #expect(durations.buckets[3].total == .milliseconds(3))
        #expect(durations.buckets[14].total == .seconds(11))
        #expect(durations.count == 5)
        #expect(durations.total == .nanoseconds(11_003_000_000 + 1_000_001))
        #expect(FetchDurations.upperBounds == FetchDurations.upperBounds.sorted())
    }

    /// The first fetch and each refetch of an observation count, once per
    /// shared observation whatever its subscribers; one-off reads do not.
    @Test(arguments: DatabaseKind.queueAndPool)
    func eachFetchOfAnObservationCountsOnce(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try kind.open(in: directory)
            try await database.write { db in try db.execute(sql: playerSchema) }
            #expect(database.fetchDurations.count == 0)
            _ = try await database.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") }
            #expect(database.fetchDurations == FetchDurations())

            let request = IntRequest("SELECT count(*) FROM player")
            let (first, firstTask) = record(database.observe(request))
            let (second, secondTask) = record(database.observe(request))
            defer {
                firstTask.cancel()
                secondTask.cancel()
            }
            try await first.wait(forCount: 1)
            try await second.wait(forCount: 1)
            #expect(database.fetchDurations.count == 1)

            try await database.write { db in
                try db.execute(sql: "INSERT INTO player (name, score) VALUES ('ann', 1)")
            }
            try await first.wait { $0.last?.value == 1 }
            try await second.wait { $0.last?.value == 1 }
            let durations = database.fetchDurations
            #expect(durations.count == 2)
            #expect(durations.total > .zero)
            #expect(durations.total == durations.buckets.reduce(.zero) { $0 + $1.total })
        }
    }
}
