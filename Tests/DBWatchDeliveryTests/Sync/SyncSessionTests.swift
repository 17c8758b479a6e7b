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
            // The snapshot, the batch that was blocked, then one for the rest.
            #expect(written.batches.count <= 3, "\(written.batches.count) batches for 30 commits")
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
