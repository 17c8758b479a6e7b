import DBWatch
import DBWatchTestSupport
import Logging
import Testing

/// What a server reads to watch its observations: how many run, how many
/// subscriptions they have, and the warnings of failing ones.
@Suite("Monitoring observations: counts and logs")
struct ObservationMonitoringTests {
    static func open(
        _ kind: DatabaseKind, in directory: TemporaryDirectory, logger: Logger? = nil
    ) async throws -> any DatabaseWriter {
        var configuration = Configuration()
        if let logger { configuration.logger = logger }
        let database = try kind.open(in: directory, configuration: configuration)
        try await database.write { db in try db.execute(sql: playerSchema) }
        return database
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func subscribersCountEachLoopObservationsCountSharedOnesOnce(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            #expect(database.subscriberCount == 0)
            var tasks: [Task<Void, Never>] = []
            var recorders: [ValueRecorder<Result<Int, any Error>>] = []
            for sql in Array(repeating: "SELECT count(*) FROM player", count: 3) + ["SELECT max(score) FROM player"] {
                let (recorder, task) = record(database.observe(IntRequest(sql)))
                tasks.append(task)
                recorders.append(recorder)
            }
            for recorder in recorders { try await recorder.wait(forCount: 1) }
            #expect(database.observationCount == 2)
            #expect(database.subscriberCount == 4)

            // A live query counts as one subscription, whatever its own subscribers.
            let live = LiveQuery(PlayerNames(), in: database)
            let loops = (0..<3).map { _ in Task { for await _ in live.values {} } }
            try await waitUntil { live.subscriberCount == 3 && database.subscriberCount == 5 }
            #expect(database.observationCount == 3)
            for loop in loops { loop.cancel() }

            tasks[0].cancel()
            try await waitUntil { database.subscriberCount == 3 }
            #expect(database.observationCount == 2)
            for task in tasks { task.cancel() }
            try await waitUntil { database.subscriberCount == 0 && database.observationCount == 0 }
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func subscriptionsEndingWithTheClosedDatabaseAreCountedOut(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try await Self.open(kind, in: directory)
            let tasks = (0..<3).map { _ in Task { for await _ in database.observe(PlayerNames()).results {} } }
            try await waitUntil { database.subscriberCount == 3 }
            await database.close()
            try await withTimeout { for task in tasks { await task.value } }
            #expect(database.subscriberCount == 0)
            #expect(database.observationCount == 0)
        }
    }

    /// One warning when fetches start failing, none for the same failure
    /// again, one info when a fetch succeeds again; a new failure warns again.
    @Test(arguments: DatabaseKind.queueAndPool)
    func failuresAreLoggedOncePerTransitionWithTheRequest(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let logs = LogRecorder()
            let database = try await Self.open(kind, in: directory, logger: logs.logger(level: .info))
            let request = IntRequest("SELECT count(*) FROM missing")
            let (results, task) = record(database.observe(request))
            defer { task.cancel() }
            try await results.wait(forCount: 1)
            #expect(results.values.last?.value == nil)
            try await waitUntil { logs.messages(at: .warning).count == 1 }
            let warning = try #require(logs.messages(at: .warning).first)
            #expect(warning.contains(String(describing: request)), "\(warning)")
            #expect(warning.contains("no such table: missing"), "\(warning)")

            // While failing, every commit refetches: the same failure is not logged again.
            for name in ["a", "b", "c"] {
                let fetches = database.statistics(for: request)?.fetches ?? 0
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: [name])
                }
                try await waitUntil { (database.statistics(for: request)?.fetches ?? 0) > fetches }
            }
            #expect(logs.messages(at: .warning).count == 1, "\(logs.messages(at: .warning))")

            try await database.write { db in try db.execute(sql: "CREATE TABLE missing (a)") }
            try await results.wait { $0.last?.value == 0 }
            try await waitUntil { logs.messages(at: .info).count == 1 }
            #expect(logs.messages(at: .info).first?.contains(String(describing: request)) == true)

            try await database.write { db in try db.execute(sql: "DROP TABLE missing") }
            try await results.wait { $0.count == 3 }
            try await waitUntil { logs.messages(at: .warning).count == 2 }
            // Nothing else at warning level or above.
            #expect(logs.entries.filter { $0.level >= .warning }.count == 2)
        }
    }

    /// Closing is not a failure of the request: nothing is logged.
    @Test func closingLogsNoWarning() async throws {
        let logs = LogRecorder()
        var configuration = Configuration()
        configuration.logger = logs.logger(level: .info)
        let queue = try DatabaseQueue(configuration: configuration)
        try await queue.write { db in try db.execute(sql: playerSchema) }
        let (results, task) = record(queue.observe(PlayerNames()))
        try await results.wait(forCount: 1)
        await queue.close()
        try await withTimeout { await task.value }
        #expect(logs.entries.isEmpty, "\(logs.entries.map(\.message))")
    }
}
