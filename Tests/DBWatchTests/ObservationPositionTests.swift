import DBWatchTestSupport
import Testing

@testable import DBWatch

/// Positions (`PositionedResult`): each fetched result carries the serial
/// of the last commit its snapshot holds, unchanged fetches are reported
/// to the subscriptions that ask, and a probe tells whether a position is
/// still current. The ground of the sync protocol's batches.
@Suite("Observation positions")
struct ObservationPositionTests {
    static let schema = "CREATE TABLE t (id INTEGER PRIMARY KEY); CREATE TABLE u (id INTEGER PRIMARY KEY)"
    static let count = IntRequest("SELECT count(*) FROM t")

    /// Observes the count of `t` while `insert` adds `inserts` rows, one per
    /// commit, after the first result; checks that each result at position
    /// `p` counts exactly the commits up to `p` (`p - p0`) and that
    /// positions never decrease. Returns how many elements came.
    func expectCountsMatchPositions(
        in database: any DatabaseWriter, inserts: Int, insert: () async throws -> Void
    ) async throws -> Int {
        let observed = Protected<[(count: Int?, position: UInt64)]>([])
        let consumer = Task {
            for await element in database.observe(Self.count).positioned {
                let count = element.result.map { try? $0.get() } ?? nil
                observed.withLock { $0.append((count, element.position)) }
                if count == inserts { return }
            }
        }
        defer { consumer.cancel() }
        try await waitUntil { !observed.withLock { $0.isEmpty } }
        try await insert()
        await consumer.value
        let elements = observed.withLock { $0 }
        let first = try #require(elements.first)
        #expect(first.count == 0)
        var current = 0
        var lastPosition = first.position
        for element in elements.dropFirst() {
            #expect(element.position >= lastPosition, "positions never decrease")
            lastPosition = element.position
            if let count = element.count { current = count }
            #expect(
                UInt64(current) == element.position - first.position,
                "count \(current) at position \(element.position), first at \(first.position)")
        }
        #expect(current == inserts)
        return elements.count
    }

    /// Every commit after the first result inserts one row. The readers of
    /// a pool fetch while the writer commits, so that snapshots are taken
    /// while commits become visible.
    @Test(arguments: DatabaseKind.queueAndPool)
    func aResultHoldsExactlyTheCommitsUpToItsPosition(kind: DatabaseKind) async throws {
        try await withDatabase(kind, schema: Self.schema) { database in
            try await withTimeout {
                _ = try await expectCountsMatchPositions(in: database, inserts: 300) {
                    for _ in 0..<300 {
                        try await database.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
                    }
                }
            }
        }
    }

    /// The same, with a writer that commits without pause (one job, one
    /// insert per commit): the readers find no moment between two commits,
    /// and take their snapshots while holding the writer at the gate.
    @Test func aResultHoldsExactlyTheCommitsUpToItsPositionWhileTheWriterNeverPauses() async throws {
        try await withDatabase(.pool, schema: Self.schema) { database in
            try await withTimeout {
                let elements = try await expectCountsMatchPositions(in: database, inserts: 10_000) {
                    try await database.writeWithoutTransaction { db in
                        for _ in 0..<10_000 { try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
                    }
                }
                #expect(elements > 2, "results came while the writer committed")
            }
        }
    }

    /// Commits made while nothing is observed go unnumbered: the first
    /// observation after them starts past every position handed out
    /// before, so a client that holds a value at such a position is not
    /// told that nothing changed since.
    @Test(arguments: DatabaseKind.queueAndPool)
    func theFirstObservationAfterUnobservedCommitsStartsAtANewPosition(kind: DatabaseKind) async throws {
        try await withDatabase(kind, schema: Self.schema) { database in
            try await withTimeout {
                let observed = try await Self.firstPosition(of: database)
                // The observation ended: nothing is observed.
                try await waitUntil { database.observationCount == 0 }
                try await database.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
                #expect(database.commitPosition == observed, "an unobserved commit is not numbered")
                var iterator = database.observe(Self.count).positioned.makeAsyncIterator()
                let first = try #require(await iterator.next())
                #expect((try? first.result?.get()) == 1)
                #expect(first.position > observed)
            }
        }
    }

    /// The position of a new observation's first result; the observation
    /// ends when it returns.
    static func firstPosition(of database: any DatabaseWriter) async throws -> UInt64 {
        var iterator = database.observe(Self.count).positioned.makeAsyncIterator()
        return try #require(await iterator.next()).position
    }

    /// The same for another process's commits, which are looked for only
    /// while something is observed.
    @Test func theFirstObservationAfterAnotherProcessCommittedStartsAtANewPosition() async throws {
        try await withTemporaryDirectory { directory in
            try await withTimeout {
                let path = directory.file("db.sqlite")
                var configuration = Configuration()
                configuration.externalChangeDetection = ExternalChangeDetection()
                let pool = try DatabasePool(path: path, configuration: configuration)
                try await pool.write { db in try db.execute(sql: Self.schema) }
                let before = pool.commitPosition
                let other = try DatabaseQueue(path: path)
                try await other.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
                await other.close()
                var iterator = pool.observe(Self.count).positioned.makeAsyncIterator()
                let first = try #require(await iterator.next())
                #expect((try? first.result?.get()) == 1)
                #expect(first.position > before)
                await pool.close()
            }
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func anUnchangedFetchIsReportedAndTheProbeTellsUntilWhenAPositionHolds(kind: DatabaseKind) async throws {
        try await withDatabase(kind, schema: Self.schema) { database in
            try await withTimeout {
                var iterator = database.observe(Self.count).positioned.makeAsyncIterator()
                let first = try #require(await iterator.next())
                #expect((try? first.result?.get()) == 0)
                #expect(iterator.probe.isCurrent(at: first.position))

                // A commit outside the region: the first position stays current.
                try await database.write { db in try db.execute(sql: "INSERT INTO u DEFAULT VALUES") }
                #expect(iterator.probe.isCurrent(at: first.position))

                // A commit in the region that changes nothing: no longer current
                // at once, then a position alone, current again.
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t DEFAULT VALUES")
                    try db.execute(sql: "DELETE FROM t")
                }
                #expect(!iterator.probe.isCurrent(at: first.position))
                // The first position's value held until that commit, not after.
                let touched = database.commitPosition
                #expect(iterator.probe.firstPossibleChange(after: first.position) == touched)
                let unchanged = try #require(await iterator.next())
                #expect(unchanged.result == nil)
                #expect(unchanged.position > first.position)
                #expect(iterator.probe.isCurrent(at: unchanged.position))

                // A change: a result at a later position.
                try await database.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
                let changed = try #require(await iterator.next())
                #expect((try? changed.result?.get()) == 1)
                #expect(changed.position > unchanged.position)
                #expect(iterator.probe.isCurrent(at: changed.position))
                // Later commits in the region leave the first change where it was.
                #expect(iterator.probe.firstPossibleChange(after: first.position) == touched)
                #expect(iterator.probe.firstPossibleChange(after: unchanged.position) == changed.position)
            }
        }
    }

    @Test func aPlainObservationNeverSeesUnchangedFetches() async throws {
        try await withDatabase(.inMemory, schema: Self.schema) { database in
            try await withTimeout {
                var plain = database.observe(Self.count).makeAsyncIterator()
                var positioned = database.observe(Self.count).positioned.makeAsyncIterator()
                #expect(try await plain.next() == 0)
                _ = await positioned.next()
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t DEFAULT VALUES")
                    try db.execute(sql: "DELETE FROM t")
                }
                // The shared driver reports the unchanged fetch to the positioned subscription only.
                #expect(try #require(await positioned.next()).result == nil)
                try await database.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
                #expect(try await plain.next() == 1)
            }
        }
    }

    /// A commit's instant is recorded when it is published, and found by
    /// its position while observations run; a position that is no logged
    /// commit's has none. A plain observation's results carry their
    /// positions too (`Results.Iterator.nextPositioned()`), without
    /// positions alone.
    @Test(arguments: DatabaseKind.queueAndPool)
    func aCommitsInstantIsFoundByItsPosition(kind: DatabaseKind) async throws {
        try await withDatabase(kind, schema: Self.schema) { database in
            try await withTimeout {
                let beforeObserving = database.commitPosition
                var results = database.observe(Self.count).results.makeAsyncIterator()
                #expect(try await results.nextPositioned()?.result?.get() == 0)
                // Published before anything was observed: not in the log.
                #expect(database.commitInstant(at: beforeObserving) == nil)

                let beforeCommit = ContinuousClock.now
                try await database.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
                let afterCommit = ContinuousClock.now
                let second = try #require(await results.nextPositioned())
                #expect(try second.result?.get() == 1)
                let instant = try #require(database.commitInstant(at: second.position))
                #expect(beforeCommit <= instant && instant <= afterCommit)
                #expect(database.commitInstant(at: second.position + 1) == nil)

                // A commit of another table: its own instant, later.
                try await database.write { db in try db.execute(sql: "INSERT INTO u DEFAULT VALUES") }
                let later = try #require(database.commitInstant(at: database.commitPosition))
                #expect(later >= instant)
                #expect(database.commitInstant(at: second.position) == instant)

                // A fetch that finds the count unchanged gives no element: the next is the next value.
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t DEFAULT VALUES")
                    try db.execute(sql: "DELETE FROM t WHERE id = last_insert_rowid()")
                }
                try await database.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
                #expect(try await results.nextPositioned()?.result?.get() == 2)
            }
        }
    }
}
