@testable import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What remains when consumers are slow or gone.
@Suite("Slow consumers and cancellation")
struct SlowConsumerTests {
    /// Resident memory of this process, in bytes.
    static func heapInUse() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test func memoryStaysBoundedWhile100000CommitsPassAConsumerThatDoesNotRead() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE counter (n INTEGER); INSERT INTO counter VALUES (0)")
        }
        let request = IntRequest("SELECT n FROM counter")
        try await withTimeout(seconds: 120) { () async throws in
            var iterator = queue.observe(request).makeAsyncIterator()
            let first = try await iterator.next()
            #expect(first == 0)
            let heapBefore = Self.heapInUse()
            var peak = heapBefore
            var mostQueuedJobs = 0
            // 100 jobs of 1,000 autocommit updates: 100,000 commits, none read.
            for _ in 0..<100 {
                let queued = try await queue.writeWithoutTransaction { db in
                    let statement = try db.cachedStatement(sql: "UPDATE counter SET n = n + 1")
                    var mostQueued = 0
                    for _ in 0..<1000 {
                        try statement.execute()
                        mostQueued = max(mostQueued, queue.jobs.queuedJobCount)
                    }
                    return mostQueued
                }
                mostQueuedJobs = max(mostQueuedJobs, queued)
                peak = max(peak, Self.heapInUse())
            }
            // What could grow is bounded: at most one fetch waits in the
            // queue at a time (commits coalesce: the jobs queued are counted
            // after every commit), and the consumer's mailbox holds one value.
            #expect(mostQueuedJobs <= 3)
            // Resident memory is shared with the tests running in parallel
            // (the integration's HTTP servers and their clients among them,
            // and multiplied by the thread sanitizer's shadow memory): a
            // coarse check that 100,000 buffered values did not pile up; the
            // precise ones are the jobs queued, counted above, and the
            // values received below.
            let growth = peak - heapBefore
            let bound = isThreadSanitized ? 1 << 30 : 512 << 20
            #expect(growth < bound, "resident memory grew by \(growth) bytes")
            // The consumer asks again: it gets a coalesced, recent value, and then the newest.
            var received: [Int] = []
            while received.last != 100_000 {
                received.append(try #require(await iterator.next(), "after \(received)"))
            }
            #expect(received.count <= 2)
            let statistics = try #require(queue.statistics(for: request))
            #expect(statistics.changesNotified == 100_000)
            #expect(statistics.fetches < 100_000)
        }
        #expect(queue.observationCount == 0)
    }

    @Test func cancellingManyConsumersLeavesNothing() async throws {
        let queue = try await makePlayerQueue()
        var tasks: [Task<Void, Never>] = []
        var recorders: [ValueRecorder<Result<[Row], any Error>>] = []
        for index in 0..<200 {
            let (recorder, task) = record(
                queue.observe(SQLRequest("SELECT * FROM player WHERE id = ?", arguments: [index])))
            tasks.append(task)
            recorders.append(recorder)
        }
        for recorder in recorders { try await recorder.wait(forCount: 1) }
        #expect(queue.observationCount == 200)
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        #expect(queue.observationCount == 0)
        // With no observer left, the next write removes the hooks.
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (name) VALUES ('x')") }
        let hooked = try await queue.writeWithoutTransaction { db in db.changeCollector!.hooksInstalled }
        #expect(!hooked)
    }

    @Test func droppingAnIteratorWithoutCancellingReleasesIt() async throws {
        let queue = try await makePlayerQueue()
        try await withTimeout { () async throws in
            var iterator: QueryObservation<PlayerNames>.Iterator? = queue.observe(PlayerNames()).makeAsyncIterator()
            _ = try await iterator!.next()
            #expect(queue.observationCount == 1)
            iterator = nil
            #expect(queue.observationCount == 0)
        }
    }
}
