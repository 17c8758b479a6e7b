import DBWatch
import DBWatchTestSupport
import Foundation
import Logging
import Testing

@testable import DBWatchDelivery

/// A sync session's batches, driven without a server: what a client that
/// reads slowly receives, and how positions and snapshots follow what it
/// holds.
@Suite("Sync sessions")
struct SyncSessionTests {
    struct Item: Codable, Hashable, Identifiable, Sendable {
        var id: Int
        var score: Int
    }

    /// Items by score: one commit moves one item.
    struct Items: Queryable {
        static var defaultValue: [Item] { [] }
        func fetch(_ db: Database) throws -> [Item] {
            try db.fetchAll(sql: "SELECT id, score FROM item ORDER BY score DESC, id").map { row in
                Item(
                    id: Int.fromDatabaseValue(row["id"] ?? .null) ?? 0,
                    score: Int.fromDatabaseValue(row["score"] ?? .null) ?? 0)
            }
        }
    }

    /// The frames a session wrote, as JSON objects (hello, batches, errors).
    final class Written: Sendable {
        private let frames = Protected<[[String: Any]]>([])
        func append(_ frame: Frame) {
            let text = String(decoding: frame.serverSentEvent, as: UTF8.self)
            guard let data = text.split(separator: "\n").first(where: { $0.hasPrefix("data: ") })?.dropFirst(6),
                let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]
            else { return }
            frames.withLock { $0.append(object) }
        }
        var all: [[String: Any]] { frames.withLock { $0 } }
        var batches: [[String: Any]] { all.filter { $0["type"] as? String == "batch" } }
    }

    /// A client that stops reading after its first batch: the commits made
    /// meanwhile reach it, once it reads again, as one catch-up (never a
    /// queue of batches), and applying it gives the fresh result.
    @Test func aClientThatDoesNotReadGetsOneBatchForManyCommits() async throws {
        try await withTimeout {
            let database = try DatabaseQueue()
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, score INTEGER NOT NULL)")
                for id in 1...200 {
                    try db.execute(sql: "INSERT INTO item (id, score) VALUES (?, ?)", arguments: [id, id])
                }
            }
            let live = LiveQueries(database)
            let session = try live.syncSession(
                transport: .serverSentEvents, owner: SyncOwner(nil), logger: Logger(label: "SyncSessionTests"),
                resolve: { _ in .identifiable(Items()) }
            ).get()
            let written = Written()
            let reading = Gate()
            let running = Task {
                try await session.run { frame in
                    // The second batch blocks, as a socket that takes nothing.
                    if written.batches.count == 1 { await reading.wait() }
                    written.append(frame)
                }
            }
            try await session.receive(Data(#"{"type":"subscribe","id":"items","query":"items"}"#.utf8))
            try await waitUntil { written.batches.count == 1 }

            for step in 1...30 {
                try await database.write { db in
                    try db.execute(
                        sql: "UPDATE item SET score = ? WHERE id = ?", arguments: [1000 + step, step % 200 + 1])
                }
            }
            reading.open()
            let expected = try await database.read { db in try Items().fetch(db) }
            let results = RowsByID()
            try await waitUntil { (try? results.apply(written.batches)) == expected }
            // The snapshot, the batch that was blocked, then one at the
            // feed's position when the client reads again, and one for each
            // fetch the feed had yet to make: at most one running and one
            // pending (a driver coalesces the commits that come meanwhile).
            #expect(written.batches.count <= 5, "\(written.batches.count) batches for 30 commits")
            let kinds = written.batches.compactMap {
                ($0["changes"] as? [String: [String: Any]])?["items"]?["kind"] as? String
            }
            #expect(kinds.first == "snapshot")
            #expect(kinds.dropFirst().allSatisfy { $0 == "changes" || $0 == "catchUp" })
            session.clientLeft()
            _ = try? await running.value
            await live.shutDown()
        }
    }

    /// The first `limit` items by score.
    struct TopItems: Queryable {
        static var defaultValue: [Item] { [] }
        let limit: Int
        func fetch(_ db: Database) throws -> [Item] { Array(try Items().fetch(db).prefix(limit)) }
    }

    /// Two subscriptions posted in one array (what a client sends when it
    /// subscribes again after reconnecting) enter one batch together, even
    /// when the first one's value is ready long before the second resolves:
    /// the client never shows one as of a newer position than the other.
    @Test func subscriptionsPostedInOneArrayEnterTheSameBatch() async throws {
        try await withTimeout {
            let database = try DatabaseQueue()
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, score INTEGER NOT NULL)")
                for id in 1...5 {
                    try db.execute(sql: "INSERT INTO item (id, score) VALUES (?, ?)", arguments: [id, id])
                }
            }
            let live = LiveQueries(database)
            let resolving = Gate()
            let laterAsked = Protected(false)
            let resolve: @Sendable (SyncSubscription) async throws -> SyncQuery = { subscription in
                if subscription.query == "later" {
                    laterAsked.withLock { $0 = true }
                    await resolving.wait()
                }
                return .identifiable(TopItems(limit: subscription.query == "later" ? 2 : 3))
            }
            let logger = Logger(label: "SyncSessionTests")
            let session = try live.syncSession(
                transport: .serverSentEvents, owner: SyncOwner(nil), logger: logger, resolve: resolve
            ).get()
            let written = Written()
            let running = Task { try await session.run { frame in written.append(frame) } }
            // Another connection of the first query: its batch says the
            // shared feed has its value while the second query resolves.
            let observer = try live.syncSession(
                transport: .serverSentEvents, owner: SyncOwner(nil), logger: logger, resolve: resolve
            ).get()
            let observed = Written()
            let observing = Task { try await observer.run { frame in observed.append(frame) } }
            try await observer.receive(Data(#"{"type":"subscribe","id":"a","query":"first"}"#.utf8))
            try await waitUntil { observed.batches.count == 1 }

            let array =
                #"[{"type":"subscribe","id":"a","query":"first"},"#
                + #"{"type":"subscribe","id":"b","query":"later"}]"#
            let receiving = Task { try await session.receive(Data(array.utf8)) }
            // The first subscription is attached (its feed has a value), the
            // second resolves; a commit moves the first.
            try await waitUntil { laterAsked.withLock { $0 } }
            try await database.write { db in try db.execute(sql: "UPDATE item SET score = 100 WHERE id = 1") }
            try await waitUntil { observed.batches.count == 2 }
            resolving.open()
            try await receiving.value
            try await waitUntil { !written.batches.isEmpty }
            let first = try #require(written.batches.first?["changes"] as? [String: Any])
            #expect(Set(first.keys) == ["a", "b"], "the first batch holds both: \(first.keys)")

            session.clientLeft()
            observer.clientLeft()
            _ = try? await running.value
            _ = try? await observing.value
            await live.shutDown()
        }
    }

    /// Items from a table that does not exist: every fetch fails.
    struct MissingItems: Queryable {
        static var defaultValue: [Item] { [] }
        func fetch(_ db: Database) throws -> [Item] {
            try db.execute(sql: "SELECT * FROM missing")
            return []
        }
    }

    /// A subscription whose fetches fail is in error, as its client is told:
    /// though it came in an array (whose subscriptions wait for each other's
    /// first values), it holds back no batch of the others.
    @Test func aSubscriptionInErrorHoldsNoBatchBack() async throws {
        try await withTimeout {
            let database = try DatabaseQueue()
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, score INTEGER NOT NULL)")
                try db.execute(sql: "INSERT INTO item (id, score) VALUES (1, 1)")
            }
            let live = LiveQueries(database)
            let session = try live.syncSession(
                transport: .serverSentEvents, owner: SyncOwner(nil), logger: Logger(label: "SyncSessionTests"),
                resolve: { subscription in
                    subscription.query == "broken" ? .identifiable(MissingItems()) : .identifiable(TopItems(limit: 5))
                }
            ).get()
            let written = Written()
            let running = Task { try await session.run { frame in written.append(frame) } }
            let array =
                #"[{"type":"subscribe","id":"good","query":"top"},"#
                + #"{"type":"subscribe","id":"bad","query":"broken"}]"#
            try await session.receive(Data(array.utf8))
            try await waitUntil { !written.batches.isEmpty }
            let errors = written.all.filter { $0["type"] as? String == "error" }
            #expect(errors.map { $0["id"] as? String } == ["bad"])
            #expect((written.batches[0]["changes"] as? [String: Any])?.keys.sorted() == ["good"])
            try await database.write { db in try db.execute(sql: "INSERT INTO item (id, score) VALUES (2, 2)") }
            try await waitUntil { written.batches.count == 2 }
            #expect((written.batches[1]["changes"] as? [String: Any])?.keys.sorted() == ["good"])
            session.clientLeft()
            _ = try? await running.value
            await live.shutDown()
        }
    }

    /// A database of one item, and live queries that observe one query at
    /// most and keep what a client left for an hour.
    static func oneObservationAtMost() async throws -> (DatabaseQueue, LiveQueries) {
        let database = try DatabaseQueue()
        try await database.write { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, score INTEGER NOT NULL)")
            try db.execute(sql: "INSERT INTO item (id, score) VALUES (1, 1)")
        }
        var configuration = LiveQueriesConfiguration()
        configuration.maxObservations = 1
        configuration.syncLinger = .seconds(3600)
        return (database, LiveQueries(database, configuration: configuration))
    }

    /// At the limit of observations, a subscription that lingers after its
    /// client left gives way to a query a client asks for; one that a
    /// client uses does not (the newcomer is refused).
    @Test func aLingeringSubscriptionGivesWayAtTheLimitOfObservations() async throws {
        try await withTimeout {
            let (_, live) = try await Self.oneObservationAtMost()
            let session = try live.syncSession(
                transport: .serverSentEvents, owner: SyncOwner(nil), logger: Logger(label: "SyncSessionTests"),
                resolve: { subscription in .identifiable(TopItems(limit: Int(subscription.query) ?? 1)) }
            ).get()
            let written = Written()
            let running = Task { try await session.run { frame in written.append(frame) } }
            try await session.receive(Data(#"{"type":"subscribe","id":"a","query":"1"}"#.utf8))
            try await waitUntil { written.batches.count == 1 }
            try await session.receive(Data(#"{"type":"unsubscribe","id":"a"}"#.utf8))
            // The first query lingers: the second takes its place.
            try await session.receive(Data(#"{"type":"subscribe","id":"b","query":"2"}"#.utf8))
            try await waitUntil { written.batches.count == 2 }
            #expect((written.batches[1]["changes"] as? [String: Any])?["b"] != nil)
            // The second is in use: a third is refused.
            await #expect(throws: LiveQueriesError.tooManyObservations) {
                try await session.receive(Data(#"{"type":"subscribe","id":"c","query":"3"}"#.utf8))
            }
            session.clientLeft()
            _ = try? await running.value
            await live.shutDown()
        }
    }

    /// A catch-up request never makes a lingering subscription give way:
    /// its history is what a returning client resumes from, and requests
    /// with ever new parameters would otherwise push every one out. At the
    /// limit, a catch-up of a query nothing observes is refused (503),
    /// unless what lingers was observed for catch-ups alone: that gives way.
    @Test func aCatchUpPushesOutOnlyWhatCatchUpsAloneObserve() async throws {
        try await withTimeout {
            let (database, live) = try await Self.oneObservationAtMost()
            let resolve: @Sendable (SyncSubscription) async throws -> SyncQuery = { subscription in
                .identifiable(TopItems(limit: Int(subscription.query) ?? 1))
            }
            let logger = Logger(label: "SyncSessionTests")
            func catchUp(_ query: String, since: UInt64) async -> Int {
                await live.syncCatchUp(
                    SyncSubscription(query: query), since: "\(live.syncEpoch)/\(since)", shared: true, logger: logger,
                    resolve: resolve
                ).status
            }
            // Observed for catch-ups alone: the next catch-up's query takes
            // its place. (Either answer is 410: a new feed's history starts
            // at its first fetch, past the commits before anything observed.)
            #expect(await catchUp("4", since: database.commitPosition) != 503)
            #expect(await catchUp("3", since: database.commitPosition) != 503)

            let session = try live.syncSession(
                transport: .serverSentEvents, owner: SyncOwner(nil), logger: logger, resolve: resolve
            ).get()
            let written = Written()
            let running = Task { try await session.run { frame in written.append(frame) } }
            try await session.receive(Data(#"{"type":"subscribe","id":"a","query":"1"}"#.utf8))
            try await waitUntil { written.batches.count == 1 }
            let before = database.commitPosition
            try await database.write { db in try db.execute(sql: "UPDATE item SET score = 2") }
            try await waitUntil { written.batches.count == 2 }
            try await session.receive(Data(#"{"type":"unsubscribe","id":"a"}"#.utf8))
            // A subscription's feed lingers: a catch-up of another query is refused.
            #expect(await catchUp("2", since: database.commitPosition) == 503)
            // Its history is still there (a new feed's would start after `before`: 410).
            #expect(await catchUp("1", since: before) == 200)
            session.clientLeft()
            _ = try? await running.value
            await live.shutDown()
        }
    }

    /// Holds fetches while closed, each until it is let through: a test
    /// knows which fetch is in flight when it commits.
    final class FetchHold: Hashable, @unchecked Sendable {  // every field is read and written with `condition` locked
        static func == (lhs: FetchHold, rhs: FetchHold) -> Bool { lhs === rhs }
        func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

        private let condition = NSCondition()
        private var isClosed = false
        private var passes = 0
        private var arrived = 0

        /// How many fetches reached the hold while it was closed.
        var arrivals: Int { condition.withLock { arrived } }

        func close() { condition.withLock { isClosed = true } }

        /// Lets every held fetch and all later ones through.
        func open() {
            condition.withLock { isClosed = false }
            condition.broadcast()
        }

        /// Lets one held fetch through.
        func passOne() {
            condition.withLock { passes += 1 }
            condition.broadcast()
        }

        /// Called by a fetch: waits while closed until let through (at most
        /// a minute, so a failing test never leaves a reader blocked).
        func pass() {
            condition.lock()
            defer { condition.unlock() }
            guard isClosed else { return }
            arrived += 1
            let deadline = Date(timeIntervalSinceNow: 60)
            while isClosed, passes == 0, condition.wait(until: deadline) {}
            if passes > 0 { passes -= 1 }
        }
    }

    /// ``Items`` behind a ``FetchHold``.
    struct HeldItems: Queryable {
        static var defaultValue: [Item] { [] }
        let hold: FetchHold
        func fetch(_ db: Database) throws -> [Item] {
            hold.pass()
            return try Items().fetch(db)
        }
    }

    /// A commit lands while a fetch runs, and the fetch that follows it
    /// takes long: the first fetch's value is the value at its position,
    /// and is sent there, without waiting for the next fetch (a session
    /// that waited for a value no commit has touched since would send
    /// nothing while a table is written faster than it is fetched). The
    /// batch holds the first commit and not the second.
    @Test func aValueIsSentAtItsPositionWhileTheNextCommitIsFetched() async throws {
        try await withTimeout {
            try await withPool { pool in
                try await pool.write { db in
                    try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, score INTEGER NOT NULL)")
                    for id in 1...5 {
                        try db.execute(sql: "INSERT INTO item (id, score) VALUES (?, ?)", arguments: [id, id])
                    }
                }
                var configuration = LiveQueriesConfiguration()
                configuration.closesDatabaseOnShutdown = false  // withPool closes it
                let live = LiveQueries(pool, configuration: configuration)
                let hold = FetchHold()
                defer { hold.open() }
                let session = try live.syncSession(
                    transport: .serverSentEvents, owner: SyncOwner(nil), logger: Logger(label: "SyncSessionTests"),
                    resolve: { _ in .identifiable(HeldItems(hold: hold)) }
                ).get()
                let written = Written()
                let running = Task { try await session.run { frame in written.append(frame) } }
                try await session.receive(Data(#"{"type":"subscribe","id":"items","query":"items"}"#.utf8))
                try await waitUntil { written.batches.count == 1 }

                hold.close()
                try await pool.write { db in try db.execute(sql: "UPDATE item SET score = 100 WHERE id = 1") }
                try await waitUntil { hold.arrivals == 1 }
                // The fetch of the first commit is in flight: a second commit.
                try await pool.write { db in try db.execute(sql: "UPDATE item SET score = 200 WHERE id = 2") }
                hold.passOne()
                // The first fetch ended; the fetch of the second is held.
                try await waitUntil { hold.arrivals == 2 }
                try await waitUntil { written.batches.count == 2 }
                let afterFirstCommit = [
                    Item(id: 1, score: 100), Item(id: 5, score: 5), Item(id: 4, score: 4), Item(id: 3, score: 3),
                    Item(id: 2, score: 2),
                ]
                #expect(try RowsByID().apply(written.batches) == afterFirstCommit)

                hold.open()
                let expected = try await pool.read { db in try Items().fetch(db) }
                try await waitUntil { (try? RowsByID().apply(written.batches)) == expected }
                session.clientLeft()
                _ = try? await running.value
                await live.shutDown()
            }
        }
    }

    /// Applies batches to a result held by id, with the protocol's rule (`KeyedRows.applying`).
    struct RowsByID {
        func apply(_ batches: [[String: Any]]) throws -> [Item] {
            var rows = try KeyedRows([])
            for batch in batches {
                guard let entry = (batch["changes"] as? [String: [String: Any]])?["items"] else { continue }
                let json = { (value: Any) in
                    try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
                }
                switch entry["kind"] as? String {
                case "snapshot":
                    rows = try KeyedRows(
                        (entry["rows"] as? [[String: Any]] ?? []).map {
                            KeyedRow(key: try json($0["key"]!), row: try json($0["row"]!))
                        })
                case "changes":
                    rows = try rows.applying(KeyedChanges(json: try json(entry)))
                case "catchUp":
                    for step in entry["steps"] as? [[String: Any]] ?? [] {
                        rows = try rows.applying(KeyedChanges(json: try json(step)))
                    }
                default: break
                }
            }
            return try rows.rows.map { try JSONDecoder().decode(Item.self, from: $0.row) }
        }
    }
}
