import DBWatch
import DBWatchTestSupport
import Logging
import Testing

@testable import DBWatchDelivery

/// The server's graceful shutdown seen once for every stream
/// (``LiveQueries/endStreams()``, started by ``LiveQueries/watchShutdown(_:)``),
/// instead of a registration per stream.
@Suite("Graceful shutdown, once for all streams")
struct EndStreamsTests {
    struct RowCount: Queryable {
        static var defaultValue: Int { 0 }
        func fetch(_ db: Database) throws -> Int { try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? 0 }
    }

    static let shutdownEvent = "event: end\ndata: {\"reason\":\"shutdown\"}\n\n"

    func accepted(_ live: LiveQueries) throws -> EventStreamSession<RowCount> {
        let admission = live.eventStream(
            RowCount(), scope: nil, lastEventID: nil, logger: Logger(label: "EndStreamsTests"),
            encode: LiveQueries.encodeJSON)
        guard case .accepted(let stream) = admission else { throw LiveQueriesError.shuttingDown }
        return stream
    }

    @Test func endStreamsEndsARunningStreamAndALaterOneWithTheFinalEvent() async throws {
        try await withTimeout {
            let database = try DatabaseQueue()
            try await database.write { db in try db.execute(sql: "CREATE TABLE t (x)") }
            let live = LiveQueries(database)
            let stream = try accepted(live)
            let (events, sink) = AsyncStream.makeStream(of: String.self)
            let running = Task {
                try await stream.run { frame in sink.yield(String(decoding: frame.serverSentEvent, as: UTF8.self)) }
                sink.finish()
            }
            var iterator = events.makeAsyncIterator()
            // The stream runs: its first value arrived.
            #expect(await iterator.next()?.contains("data: 0") == true)

            live.endStreams()
            #expect(await iterator.next() == Self.shutdownEvent)
            #expect(await iterator.next() == nil)
            try await running.value

            // Still admitted (new requests are answered), but the stream is its final event alone.
            let later = try accepted(live)
            var written: [String] = []
            try await later.run { frame in written.append(String(decoding: frame.serverSentEvent, as: UTF8.self)) }
            #expect(written == [Self.shutdownEvent])
            #expect(live.statistics.clientsConnected == 0)
            await live.shutDown()
        }
    }

    @Test func watchShutdownStartsOneTaskWhicheverStreamCallsIt() async throws {
        let live = LiveQueries(try DatabaseQueue())
        var started = 0
        for _ in 0..<3 {
            live.watchShutdown {
                started += 1
                return Task {}
            }
        }
        #expect(started == 1)
        await live.shutDown()
        // After shutdown, nothing starts again.
        live.watchShutdown {
            started += 1
            return Task {}
        }
        #expect(started == 1)
    }
}
