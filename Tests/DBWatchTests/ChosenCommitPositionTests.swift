import DBWatchTestSupport
import Testing

@testable import DBWatch

/// Positions a writer chooses (`Database.setCommitPosition`) and a
/// starting position (`DatabaseWriter.advanceCommitPosition(to:)`): what a
/// replica uses to publish its source's log positions. Positions follow
/// the chosen ones and never go back.
@Suite("Chosen commit positions")
struct ChosenCommitPositionTests {
    static let schema = "CREATE TABLE t (id INTEGER PRIMARY KEY); CREATE TABLE u (id INTEGER PRIMARY KEY)"
    static let count = IntRequest("SELECT count(*) FROM t")

    @Test(arguments: DatabaseKind.queueAndPool)
    func resultsCarryThePositionsTheWriterChose(kind: DatabaseKind) async throws {
        try await withDatabase(kind, schema: Self.schema) { database in
            try await withTimeout {
                database.advanceCommitPosition(to: 1_000)
                #expect(database.commitPosition == 1_000)
                database.advanceCommitPosition(to: 10)
                #expect(database.commitPosition == 1_000, "never back")

                var iterator = database.observe(Self.count).positioned.makeAsyncIterator()
                let first = try #require(await iterator.next())
                #expect((try? first.result?.get()) == 0)
                #expect(first.position == 1_000)

                for (index, position) in [5_000, 5_001, 9_000].enumerated() {
                    try await database.write { db in
                        try db.execute(sql: "INSERT INTO t DEFAULT VALUES")
                        db.setCommitPosition(UInt64(position))
                    }
                    var element = try #require(await iterator.next())
                    while element.result == nil { element = try #require(await iterator.next()) }
                    #expect((try? element.result?.get()) == index + 1)
                    #expect(element.position == UInt64(position))
                    #expect(database.commitPosition == UInt64(position))
                }

                // A chosen position behind the last: the next serial.
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO t DEFAULT VALUES")
                    db.setCommitPosition(42)
                }
                let behind = try #require(await iterator.next())
                #expect(behind.position == 9_001)

                // Without a chosen position: the next serial.
                try await database.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
                let plain = try #require(await iterator.next())
                #expect(plain.position == 9_002)
                #expect((try? plain.result?.get()) == 5)
            }
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func aRolledBackTransactionPublishesNoPosition(kind: DatabaseKind) async throws {
        try await withDatabase(kind, schema: Self.schema) { database in
            try await withTimeout {
                struct Refused: Error {}
                // Without observations (only the commit and rollback hooks), then with one.
                await #expect(throws: Refused.self) {
                    try await database.write { db in
                        try db.execute(sql: "INSERT INTO t DEFAULT VALUES")
                        db.setCommitPosition(700)
                        throw Refused()
                    }
                }
                #expect(database.commitPosition == 0)
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO u DEFAULT VALUES")
                    db.setCommitPosition(800)
                }
                #expect(database.commitPosition == 800, "published without observations")

                var iterator = database.observe(Self.count).positioned.makeAsyncIterator()
                let first = try #require(await iterator.next())
                #expect(first.position == 800)
                await #expect(throws: Refused.self) {
                    try await database.write { db in
                        try db.execute(sql: "INSERT INTO t DEFAULT VALUES")
                        db.setCommitPosition(900)
                        throw Refused()
                    }
                }
                #expect(database.commitPosition == 800)
                // A position chosen in a job whose commit failed does not
                // stick to the next job.
                try await database.write { db in try db.execute(sql: "INSERT INTO t DEFAULT VALUES") }
                let next = try #require(await iterator.next())
                #expect(next.position == 801)
                #expect((try? next.result?.get()) == 1)
            }
        }
    }

    /// Skipped commits count commits, not positions: jumps of the position
    /// do not count as commits.
    @Test func statisticsCountCommitsNotPositions() async throws {
        try await withDatabase(.pool, schema: Self.schema) { database in
            try await withTimeout {
                let pool = try #require(database as? DatabasePool)
                var iterator = pool.observe(Self.count).makeAsyncIterator()
                _ = try await iterator.next()
                for position in [10_000, 20_000, 30_000] {
                    try await pool.write { db in
                        try db.execute(sql: "INSERT INTO u DEFAULT VALUES")
                        db.setCommitPosition(UInt64(position))
                    }
                }
                pool.advanceCommitPosition(to: 50_000)
                let statistics = try #require(pool.statistics(for: Self.count))
                #expect(statistics.changesSkipped == 3)
                #expect(pool.commitPosition == 50_000)
            }
        }
    }
}
