@testable import DBWatch
import DBWatchTestSupport
import Foundation
import Logging
import Testing

/// What an observation guarantees its consumers (first value at once, no
/// missed change, nothing from rollbacks, consistent values in commit
/// order, latest wins, precision, errors, cancellation and closing, writers
/// never blocked), on an in-memory queue and on a file pool.
@Suite("The observation contract")
struct ObservationContractTests {
    /// Runs `body` against a queue and a pool holding the `player` table.
    static func withDatabases(
        configuration: Configuration = Configuration(), _ body: (any DatabaseWriter) async throws -> Void
    ) async throws {
        for kind in DatabaseKind.queueAndPool {
            try await withDatabase(kind, configuration: configuration, schema: playerSchema, body)
        }
    }

    static func insert(_ name: String, score: Int = 0, into database: any DatabaseWriter) async throws {
        try await database.write { db in
            try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: [name, score])
        }
    }

    @Test("Immediate first value")
    func immediateFirstValue() async throws {
        try await Self.withDatabases { database in
            try await Self.insert("Arthur", into: database)
            try await withTimeout { () async throws in
                var iterator = database.observe(PlayerNames()).makeAsyncIterator()
                #expect(try await iterator.next() == ["Arthur"])
            }
        }
    }

    @Test("No missed change")
    func noMissedChange() async throws {
        try await Self.withDatabases { database in
            let (recorder, task) = record(database.observe(PlayerNames()))
            defer { task.cancel() }
            try await recorder.wait(forCount: 1)
            for index in 0..<20 { try await Self.insert("p\(index)", into: database) }
            try await recorder.wait { $0.last?.value?.count == 20 }
        }
    }

    @Test("A commit between registration and first fetch is not missed")
    func registrationRace() async throws {
        try await Self.withDatabases { database in
            // Writes run concurrently with many registrations; each
            // observation must converge to the final state.
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for index in 0..<30 { try await Self.insert("w\(index)", into: database) }
                }
                for _ in 0..<10 {
                    group.addTask {
                        try await withTimeout { () async throws in
                            for try await names in database.observe(PlayerNames()) where names.count == 30 { break }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test("Nothing from rollbacks")
    func nothingFromRollbacks() async throws {
        struct Boom: Error {}
        try await Self.withDatabases { database in
            let (recorder, task) = record(database.observe(PlayerNames()))
            defer { task.cancel() }
            try await recorder.wait(forCount: 1)
            await #expect(throws: Boom.self) {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO player (name) VALUES ('rolled back')")
                    throw Boom()
                }
            }
            await #expect(throws: SQLiteError.self) {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO player (name) VALUES ('also rolled back')")
                    try db.execute(sql: "INSERT INTO player (id, name) VALUES (1, 'dup'), (1, 'dup')")
                }
            }
            let fetchesBefore = database.statistics(for: PlayerNames())!.fetches
            try await Self.insert("sentinel", into: database)
            try await recorder.wait { $0.last?.value == ["sentinel"] }
            #expect(recorder.values.compactMap(\.value) == [[], ["sentinel"]])
            #expect(database.statistics(for: PlayerNames())!.fetches == fetchesBefore + 1)
        }
    }

    @Test("Consistency: never a half-applied transaction")
    func consistency() async throws {
        try await Self.withDatabases { database in
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE ledger (amount INTEGER NOT NULL); INSERT INTO ledger VALUES (100)")
            }
            struct Balance: Queryable {
                static let defaultValue = 0
                func fetch(_ db: Database) throws -> Int {
                    let players = try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") ?? 0
                    let ledger = try db.fetchOne(Int.self, sql: "SELECT sum(amount) FROM ledger") ?? 0
                    return ledger + players  // each transfer moves 1 from ledger to a new player
                }
            }
            let (recorder, task) = record(database.observe(Balance()))
            defer { task.cancel() }
            for _ in 0..<20 {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO ledger VALUES (-1)")
                    try db.execute(sql: "INSERT INTO player (name) VALUES ('x')")
                }
            }
            let fetchesAfterWrites = try await database.read { db in
                try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player")
            }
            #expect(fetchesAfterWrites == 20)
            try await recorder.wait(forCount: 1)
            #expect(recorder.values.allSatisfy { $0.value == 100 })
        }
    }

    @Test("Order: values arrive in commit order")
    func order() async throws {
        try await Self.withDatabases { database in
            let (recorder, task) = record(database.observe(IntRequest("SELECT count(*) FROM player")))
            defer { task.cancel() }
            for index in 0..<50 { try await Self.insert("p\(index)", into: database) }
            try await recorder.wait { $0.last?.value == 50 }
            let counts = recorder.values.compactMap(\.value)
            #expect(counts == counts.sorted())
            #expect(Set(counts).count == counts.count)
        }
    }

    /// Fetches of one shared observation finish on several readers at once:
    /// a fetch's result must never reach a mailbox after a newer one (it used
    /// to, and the deduplication then hid the newest value for good).
    @Test("Order holds for subscribers of a shared observation while commits race its fetches")
    func orderUnderRacingFetches() async throws {
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            defer { pool.syncClose() }
            try await pool.write { db in try db.execute(sql: playerSchema) }
            let request = IntRequest("SELECT count(*) FROM player")
            var recorders: [ValueRecorder<Result<Int, any Error>>] = []
            var tasks: [Task<Void, Never>] = []
            defer { for task in tasks { task.cancel() } }
            for _ in 0..<200 {
                let (recorder, task) = record(pool.observe(request))
                recorders.append(recorder)
                tasks.append(task)
            }
            for recorder in recorders { try await recorder.wait(forCount: 1) }
            try await withThrowingTaskGroup { group in
                for writer in 0..<4 {
                    group.addTask {
                        for index in 0..<50 { try await Self.insert("w\(writer)-\(index)", into: pool) }
                    }
                }
                try await group.waitForAll()
            }
            for recorder in recorders {
                try await recorder.wait { $0.last?.value == 200 }
                let counts = recorder.values.compactMap(\.value)
                #expect(counts == counts.sorted() && Set(counts).count == counts.count, "\(counts)")
            }
        }
    }

    @Test("Latest wins: a slow consumer gets the newest state")
    func latestWins() async throws {
        try await Self.withDatabases { database in
            let request = IntRequest("SELECT count(*) FROM player")
            try await withTimeout { () async throws in
                // The slow consumer subscribes first, then a recorder of the
                // same request (one shared fetch): each value reaches the
                // slow consumer's mailbox before the recorder's.
                var slow = database.observe(request).makeAsyncIterator()
                #expect(try await slow.next() == 0)
                let (recorder, task) = record(database.observe(request))
                defer { task.cancel() }
                // 200 commits in one job: autocommit statements, one commit each.
                try await database.writeWithoutTransaction { db in
                    for index in 0..<200 {
                        try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: ["p\(index)"])
                    }
                }
                try await recorder.wait { $0.last?.value == 200 }
                // The slow consumer read nothing meanwhile: it holds at most
                // one undelivered value, and it is the newest.
                var received: [Int] = []
                while received.last != 200 {
                    received.append(try #require(await slow.next(), "after \(received)"))
                }
                #expect(received == [200])
                let statistics = try #require(database.statistics(for: request))
                #expect(statistics.changesNotified == 200)
                #expect(statistics.fetches < 201, "refetches are coalesced: \(statistics)")
            }
        }
    }

    @Test("Precision: other tables, other columns")
    func precision() async throws {
        try await Self.withDatabases { database in
            try await database.write { db in try db.execute(sql: "CREATE TABLE other (x)") }
            try await Self.insert("a", into: database)
            let (recorder, task) = record(database.observe(PlayerNames()))
            defer { task.cancel() }
            try await recorder.wait(forCount: 1)
            for _ in 0..<5 {
                try await database.write { db in try db.execute(sql: "INSERT INTO other VALUES (1)") }
                try await database.write { db in try db.execute(sql: "UPDATE player SET score = score + 1") }
            }
            // A relevant change afterwards proves the earlier ones were skipped, not pending.
            try await database.write { db in try db.execute(sql: "UPDATE player SET name = 'b'") }
            try await recorder.wait { $0.last?.value == ["b"] }
            let statistics = try #require(database.statistics(for: PlayerNames()))
            #expect(statistics.fetches == 2)
            #expect(statistics.changesNotified == 1)
            #expect(statistics.changesSkipped == 10)
            #expect(statistics.region.description == "main.player(id, name)")
        }
    }

    @Test("Errors end the throwing form")
    func errorsEndTheThrowingForm() async throws {
        try await Self.withDatabases { database in
            try await database.write { db in try db.execute(sql: "CREATE TABLE doomed (x)") }
            let request = IntRequest("SELECT count(*) FROM doomed")
            try await withTimeout { () async throws in
                var iterator = database.observe(request).makeAsyncIterator()
                #expect(try await iterator.next() == 0)
                try await database.write { db in try db.execute(sql: "DROP TABLE doomed") }
                await #expect(throws: SQLiteError.self) { _ = try await iterator.next() }
                #expect(try await iterator.next() == nil)
            }
            #expect(database.observationCount == 0)
        }
    }

    @Test("The Result form keeps going and recovers")
    func resultsRecover() async throws {
        try await Self.withDatabases { database in
            let request = IntRequest("SELECT count(*) FROM later")
            let (recorder, task) = record(database.observe(request))
            defer { task.cancel() }
            try await recorder.wait(forCount: 1)
            #expect(recorder.values[0].value == nil)  // no such table
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE later (x); INSERT INTO later VALUES (1)")
            }
            try await recorder.wait { $0.last?.value == 1 }
            try await database.write { db in try db.execute(sql: "INSERT INTO later VALUES (2)") }
            try await recorder.wait { $0.last?.value == 2 }
        }
    }

    /// Whether ``ValidatedNames`` accepts its input; shared by reference.
    final class Validity: Sendable {
        let isValid: Protected<Bool>
        init(_ isValid: Bool) { self.isValid = Protected(isValid) }
        func set(_ value: Bool) { isValid.withLock { $0 = value } }
    }

    /// Names of the players, or an error thrown before any SQL runs (a
    /// validation) while its validity is off.
    struct ValidatedNames: Queryable {
        struct Invalid: Error {}
        static let defaultValue: [String] = []
        let validity: Validity
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.validity === rhs.validity }
        func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(validity)) }
        func fetch(_ db: Database) throws -> [String] {
            guard validity.isValid.withLock({ $0 }) else { throw Invalid() }
            return try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY id")
        }
    }

    static func isInvalid(_ result: Result<[String], any Error>?) -> Bool {
        if case .failure(let error)? = result { return error is ValidatedNames.Invalid }
        return false
    }

    @Test("A first fetch that throws before reading anything recovers at the next commit, of any table")
    func aFirstFetchThatReadNothingRecovers() async throws {
        try await Self.withDatabases { database in
            try await database.write { db in try db.execute(sql: "CREATE TABLE IF NOT EXISTS other (x)") }
            let validity = Validity(false)
            let request = ValidatedNames(validity: validity)
            let (recorder, task) = record(database.observe(request))
            defer { task.cancel() }
            try await recorder.wait(forCount: 1)
            #expect(Self.isInvalid(recorder.values[0]))
            validity.set(true)
            // A failed fetch may depend on anything: every commit refetches.
            try await database.write { db in try db.execute(sql: "INSERT INTO other VALUES (1)") }
            try await recorder.wait { $0.last?.value == [] }
            try await Self.insert("Arthur", into: database)
            try await recorder.wait { $0.last?.value == ["Arthur"] }
        }
    }

    @Test("A later fetch that throws recovers, then observes its region only")
    func aLaterFetchThatThrowsRecovers() async throws {
        try await Self.withDatabases { database in
            try await database.write { db in try db.execute(sql: "CREATE TABLE IF NOT EXISTS other (x)") }
            let validity = Validity(true)
            let request = ValidatedNames(validity: validity)
            let (recorder, task) = record(database.observe(request))
            defer { task.cancel() }
            try await recorder.wait { $0.last?.value == [] }
            validity.set(false)
            try await Self.insert("Arthur", into: database)
            try await recorder.wait { Self.isInvalid($0.last) }
            validity.set(true)
            try await database.write { db in try db.execute(sql: "INSERT INTO other VALUES (1)") }
            try await recorder.wait { $0.last?.value == ["Arthur"] }
            // Recovered: commits outside its region cost it nothing again.
            let fetches = try #require(database.statistics(for: request)).fetches
            try await database.write { db in try db.execute(sql: "INSERT INTO other VALUES (2)") }
            try await Self.insert("Barbara", into: database)
            try await recorder.wait { $0.last?.value == ["Arthur", "Barbara"] }
            #expect(database.statistics(for: request)?.fetches == fetches + 1)
        }
    }

    /// Always 42, without reading the database.
    struct Constant: Queryable {
        static let defaultValue = 0
        func fetch(_ db: Database) throws -> Int { 42 }
    }

    @Test("A fetch that succeeds without reading anything observes nothing: its value cannot change")
    func aFetchThatReadsNothingObservesNothing() async throws {
        try await Self.withDatabases { database in
            let (recorder, task) = record(database.observe(Constant()))
            defer { task.cancel() }
            try await recorder.wait { $0.last?.value == 42 }
            try await Self.insert("Arthur", into: database)
            let statistics = try #require(database.statistics(for: Constant()))
            #expect(statistics.region.isEmpty)
            #expect(statistics.fetches == 1)
            #expect(statistics.changesSkipped == 1)
        }
    }

    @Test("Cancellation releases everything")
    func cancellationReleases() async throws {
        try await Self.withDatabases { database in
            let (recorder, task) = record(database.observe(PlayerNames()))
            try await recorder.wait(forCount: 1)
            #expect(database.observationCount == 1)
            task.cancel()
            await task.value
            #expect(database.observationCount == 0)
            // Breaking out of a loop releases too.
            try await withTimeout { () async throws in
                for try await _ in database.observe(AllPlayers()) { break }
            }
            #expect(database.observationCount == 0)
            // No hook work remains: the next write removes the hooks.
            try await Self.insert("after", into: database)
            let hooked = try await Self.writerHooksInstalled(database)
            #expect(!hooked)
        }
    }

    /// A request whose fetch never ends on its own; it opens `started` first.
    struct EndlessRequest: Queryable {
        static let defaultValue = 0
        let started: Gate
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.started === rhs.started }
        func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(started)) }
        func fetch(_ db: Database) throws -> Int {
            started.open()
            let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
            return try db.fetchOne(Int.self, sql: endless) ?? 0
        }
    }

    /// On a pool with one reader, so that a fetch left running would keep
    /// the next read waiting forever.
    static func withOneReaderPool(_ body: (DatabasePool) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            var configuration = Configuration()
            configuration.maximumReaderCount = 1
            let pool = try DatabasePool(path: directory.file("db.sqlite"), configuration: configuration)
            defer { pool.syncClose() }
            try await body(pool)
        }
    }

    @Test("Cancelling the last consumer interrupts its fetch in flight")
    func cancellationInterruptsTheFetch() async throws {
        try await Self.withOneReaderPool { pool in
            let started = Gate()
            let consumer = Task { for try await _ in pool.observe(EndlessRequest(started: started)) {} }
            let value = try await withTimeout {
                await started.wait()
                consumer.cancel()
                _ = await consumer.result
                return try await pool.read { db in try db.fetchOne(Int.self, sql: "SELECT 1") }
            }
            #expect(value == 1)
            try await waitUntil { pool.observationCount == 0 }
        }
    }

    /// The refetch of a commit made before `close()` delivers its value
    /// before the closed-database error (it used to be skipped when close
    /// ended the observations first), when it ends within the grace period
    /// (long here, so that a loaded machine does not end it first).
    @Test("Closing delivers the values of commits made before it")
    func closingDeliversEarlierCommits() async throws {
        var configuration = Configuration()
        configuration.closeGracePeriod = .seconds(60)
        for round in 0..<10 {
            try await Self.withDatabases(configuration: configuration) { database in
                let (recorder, task) = record(database.observe(IntRequest("SELECT count(*) FROM player")))
                defer { task.cancel() }
                try await recorder.wait(forCount: 1)
                try await Self.insert("last \(round)", into: database)
                await database.close()
                try await recorder.wait { $0.last?.value == nil && $0.count >= 2 }
                #expect(recorder.values.compactMap(\.value).last == 1, "\(recorder.values)")
            }
        }
    }

    /// A consumer that has not taken the value of a commit made before the
    /// close gets it, then the closed-database error: the error does not
    /// replace it (a loaded machine made the consumer that late in CI).
    @Test("A value not taken yet when the database closes comes before the error")
    func closingKeepsAValueNotTakenYet() async throws {
        try await withTimeout {
            let subscription = ResultMailbox<Int> { _ in }
            subscription.offer(.success(0), at: 0)
            let first = try await subscription.next()?.get()
            #expect(first == 0)
            subscription.offer(.success(1), at: 0)
            subscription.offer(.success(2), at: 0)  // latest wins among values
            subscription.finish(after: .failure(SQLiteError.databaseClosed), at: 0)
            let newest = try await subscription.next()?.get()
            #expect(newest == 2)
            let last = await subscription.next()
            #expect(throws: SQLiteError.self) { try last?.get() }
            let end = await subscription.next()
            #expect(end == nil)

            // A waiting error is replaced: at most one error, the last.
            let failing = ResultMailbox<Int> { _ in }
            failing.offer(.failure(CancellationError()), at: 0)
            failing.finish(after: .failure(SQLiteError.databaseClosed), at: 0)
            let only = await failing.next()
            #expect(throws: SQLiteError.self) { try only?.get() }
            let failingEnd = await failing.next()
            #expect(failingEnd == nil)
        }
    }

    @Test("Closing the database ends every observation")
    func closingEndsObservations() async throws {
        try await Self.withDatabases { database in
            func isClosedError(_ error: (any Error)?) -> Bool {
                (error as? SQLiteError)?.message == "database is closed"
            }
            let (results, resultsTask) = record(database.observe(PlayerNames()))
            let throwing = Task { () -> (any Error)? in
                do {
                    for try await _ in database.observe(AllPlayers()) {}
                    return nil
                } catch {
                    return error
                }
            }
            try await results.wait(forCount: 1)
            try await waitUntil { database.observationCount == 2 }
            await database.close()

            // The Result form ends after the error; the throwing form throws it.
            try await withTimeout { await resultsTask.value }
            #expect(results.values.count == 2)
            if case .failure(let error)? = results.values.last {
                #expect(isClosedError(error))
            } else {
                Issue.record("the last element is not the close error: \(results.values)")
            }
            let thrown = try await withTimeout { await throwing.value }
            #expect(isClosedError(thrown))
            #expect(database.observationCount == 0)

            // Observing a closed database ends at once with the same error.
            let late = try await withTimeout { () async throws -> [Result<[String], any Error>] in
                var elements: [Result<[String], any Error>] = []
                for await result in database.observe(PlayerNames()).results { elements.append(result) }
                return elements
            }
            #expect(late.count == 1)
            if case .failure(let error)? = late.first { #expect(isClosedError(error)) }
            #expect(database.observationCount == 0)
        }
    }

    @Test("Closing while observations start and commits land strands no consumer")
    func closingRacesWithObservations() async throws {
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            try await pool.write { db in try db.execute(sql: playerSchema) }
            let started = ValueRecorder<Int>()
            let consumers = (0..<40).map { index in
                Task { () -> Result<[String], any Error>? in
                    var last: Result<[String], any Error>?
                    // Half share one request, half observe requests of their own.
                    let request = SQLRequest(
                        "SELECT name FROM player WHERE id > ?", arguments: [index % 2 == 0 ? 0 : index])
                    for await result in pool.observe(request).results {
                        if last == nil { started.append(index) }
                        last = result.map { rows in rows.compactMap { $0["name"]?.description } }
                    }
                    return last
                }
            }
            let writer = Task {
                for score in 0..<200 {
                    do {
                        try await pool.write { db in
                            try db.execute(sql: "INSERT INTO player (name, score) VALUES ('p', ?)", arguments: [score])
                        }
                    } catch {
                        return
                    }
                }
            }
            try await started.wait(forCount: 10)
            await pool.close()
            for consumer in consumers {
                let last = try await withTimeout { await consumer.value }
                if case .failure(let error)? = last {
                    #expect((error as? SQLiteError)?.message == "database is closed")
                } else {
                    Issue.record("a consumer did not end with the close error: \(String(describing: last))")
                }
            }
            await writer.value
            #expect(pool.observationCount == 0)
        }
    }

    static func writerHooksInstalled(_ database: any DatabaseWriter) async throws -> Bool {
        if let queue = database as? DatabaseQueue {
            return try await queue.writeWithoutTransaction { db in db.changeCollector!.hooksInstalled }
        }
        let pool = database as! DatabasePool
        return try await pool.writeWithoutTransaction { db in db.changeCollector!.hooksInstalled }
    }

    @Test("Writers are not blocked by observers")
    func writersNotBlocked() async throws {
        try await withTemporaryDirectory { directory in
            let pool = try DatabasePool(path: directory.file("db.sqlite"))
            try await pool.write { db in try db.execute(sql: playerSchema) }
            let (recorder, task) = record(pool.observe(PlayerNames()))
            defer { task.cancel() }
            try await recorder.wait(forCount: 1)
            try await Self.insert("committed", into: pool)
            let inside = Gate()
            let release = Gate()
            try await withTimeout { () async throws in
                // The write may run on the calling thread, which then blocks: not a cooperative one.
                let holding = Task(executorPreference: DedicatedThreadExecutor()) {
                    try await pool.write { db in
                        try db.execute(sql: "INSERT INTO player (name) VALUES ('uncommitted')")
                        inside.open()
                        release.blockingWait()
                    }
                }
                await inside.wait()
                // The refetch for the first commit runs on a reader while the writer is busy.
                try await recorder.wait { $0.last?.value == ["committed"] }
                release.open()
                try await holding.value
                try await recorder.wait { $0.last?.value == ["committed", "uncommitted"] }
            }
        }
    }

    @Test func equatableValuesAreDeduplicated() async throws {
        try await Self.withDatabases { database in
            try await Self.insert("a", into: database)
            let (recorder, task) = record(database.observe(PlayerNames()))
            defer { task.cancel() }
            try await recorder.wait(forCount: 1)
            // Rewrites the same name: refetched, same value, not delivered.
            try await database.write { db in try db.execute(sql: "UPDATE player SET name = 'a'") }
            try await database.write { db in try db.execute(sql: "UPDATE player SET name = 'z'") }
            try await recorder.wait { $0.last?.value == ["z"] }
            #expect(recorder.values.compactMap(\.value) == [["a"], ["z"]])
            #expect(database.statistics(for: PlayerNames())!.fetches == 3)
        }
    }

    /// A driver whose last subscriber just left stays registered for a
    /// moment: a subscriber joining then must land on a new driver, never on
    /// the stopped one (it would never hear of a change again).
    @Test func aStoppingObservationIsNotSharedAnyMore() async throws {
        final class StubDriver: ObservationDriving, @unchecked Sendable {  // `isStopped` is set before sharing
            var isStopped = false
            let sharingKey: DriverSharingKey? = DriverSharingKey(IntRequest("SELECT 1"))
            func commitDidTouchRegion() -> Bool { false }
            func fetch(on database: Database, position: UInt64) -> Bool { false }
            func fetchFailed(_ error: any Error, startSerial: UInt64) -> Bool { false }
            let fetchesAlone = false
            let touchedMark = TouchedMark()
            func deliver(_ error: any Error) {}
            func endBecauseDatabaseClosed() {}
        }
        let center = ObservationCenter(fetchQueue: JobQueue(), logger: Logger(label: "test"))
        let key = DriverSharingKey(IntRequest("SELECT 1"))
        let (first, _) = center.driver(sharedAs: key) { StubDriver() }
        let (same, sameIsNew) = center.driver(sharedAs: key) { StubDriver() }
        #expect(same === first && !sameIsNew)
        first.isStopped = true
        let (replacement, isNew) = center.driver(sharedAs: key) { StubDriver() }
        #expect(replacement !== first && isNew)
        // The stopped driver's removal leaves the replacement shared.
        center.remove(first)
        #expect(center.driver(sharedAs: key) { StubDriver() }.0 === replacement)

        // And a driver that stopped refuses a subscriber that reached it
        // anyway (found just before it stopped): the caller asks again.
        let driver = ObservationDriver(
            request: IntRequest("SELECT 1"), options: ObservationOptions(), center: center)
        let leaving = ResultMailbox<Int> { _ in }
        #expect(driver.add(leaving, startFetch: false))
        driver.remove(ObjectIdentifier(leaving))
        #expect(driver.isStopped)
        #expect(!driver.add(ResultMailbox<Int> { _ in }, startFetch: false))
    }

    @Test func identicalRequestsShareOneFetch() async throws {
        try await Self.withDatabases { database in
            var recorders: [ValueRecorder<Result<[String], any Error>>] = []
            var tasks: [Task<Void, Never>] = []
            for _ in 0..<5 {
                let (recorder, task) = record(database.observe(PlayerNames()))
                recorders.append(recorder)
                tasks.append(task)
            }
            defer { for task in tasks { task.cancel() } }
            for recorder in recorders { try await recorder.wait(forCount: 1) }
            #expect(database.observationCount == 1)
            let before = database.statistics(for: PlayerNames())!.fetches
            try await Self.insert("shared", into: database)
            for recorder in recorders { try await recorder.wait { $0.last?.value == ["shared"] } }
            #expect(database.statistics(for: PlayerNames())!.fetches == before + 1)
        }
    }
}
