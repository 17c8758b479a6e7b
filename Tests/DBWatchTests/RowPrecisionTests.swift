@testable import DBWatch
import Testing

/// Promise 7 for rows: a query that selects rows by primary key does not
/// refetch for writes to other rows.
@Suite("Row precision")
struct RowPrecisionTests {
    func playerQueue() async throws -> DatabaseQueue {
        let queue = try await makePlayerQueue()
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO player (id, name, score) VALUES (1, 'a', 0), (2, 'b', 0), (5, 'e', 0)")
        }
        return queue
    }

    @Test func lookupsByRowIDAreRestrictedToTheirRows() async throws {
        let queue = try await playerQueue()
        let regions = try await queue.read { db -> [DatabaseRegion] in
            func region(_ sql: String, _ arguments: StatementArguments = []) throws -> DatabaseRegion {
                let statement = try db.cachedStatement(sql: sql)
                try statement.bind(arguments)
                return statement.executionRegion()
            }
            return [
                try region("SELECT name FROM player WHERE id = ?", [1]),
                try region("SELECT name FROM player WHERE id = :id", [":id": 5]),
                try region("SELECT name FROM player WHERE id = 2"),
                try region("SELECT count(*) FROM player WHERE rowid = ?", ["7"]),
                try region("SELECT name FROM player WHERE id IN (1, 2)"),
                try region("SELECT name FROM player WHERE score = ?", [1]),
                try region("SELECT name FROM player"),
            ]
        }
        #expect(regions[0].rowIDs[TableName("player")] == [1])
        #expect(regions[1].rowIDs[TableName("player")] == [5])
        #expect(regions[2].rowIDs[TableName("player")] == [2])
        #expect(regions[3].rowIDs[TableName("player")] == [7])
        #expect(regions[4].rowIDs.isEmpty)  // an IN list loops: no precision, never a wrong one
        #expect(regions[5].rowIDs.isEmpty)
        #expect(regions[6].rowIDs.isEmpty)
        #expect(regions[0].description == "main.player(id, name)[rowid 1]")
    }

    @Test func writesToOtherRowsCauseNoRefetch() async throws {
        let queue = try await playerQueue()
        let request = SQLRequest("SELECT name, score FROM player WHERE id = ?", arguments: [1])
        let (values, task) = record(queue.observe(request))
        defer { task.cancel() }
        try await values.wait(forCount: 1)
        try await queue.write { db in try db.execute(sql: "UPDATE player SET score = 9 WHERE id = 2") }
        try await queue.write { db in try db.execute(sql: "INSERT INTO player (id, name) VALUES (3, 'c')") }
        try await queue.write { db in try db.execute(sql: "DELETE FROM player WHERE id = 5") }
        #expect(queue.statistics(for: request)?.changesNotified == 0)
        try await queue.write { db in try db.execute(sql: "UPDATE player SET score = 7 WHERE id = 1") }
        try await values.wait { $0.last?.value?.first?[1] == .integer(7) }
        // A row moving to rowid 1, and deleting everything, are changes to row 1.
        try await queue.write { db in try db.execute(sql: "DELETE FROM player WHERE id = 1") }
        try await values.wait { $0.last?.value?.isEmpty == true }
        try await queue.write { db in try db.execute(sql: "UPDATE player SET id = 1 WHERE id = 2") }
        try await values.wait { $0.last?.value?.first?[0] == .text("b") }
        try await queue.write { db in try db.execute(sql: "DELETE FROM player") }
        try await values.wait { $0.last?.value?.isEmpty == true }
        let statistics = try #require(queue.statistics(for: request))
        #expect(statistics.changesNotified == 4)
        #expect(statistics.changesSkipped == 3)
    }

    @Test func manyRowsChangedCountAsAnyRow() async throws {
        let queue = try await playerQueue()
        let request = SQLRequest("SELECT name FROM player WHERE id = ?", arguments: [1])
        let (values, task) = record(queue.observe(request))
        defer { task.cancel() }
        try await values.wait(forCount: 1)
        // More rowids than the collector keeps: the change covers any row.
        try await queue.write { db in
            try db.execute(
                sql:
                    "WITH RECURSIVE c(x) AS (SELECT 10 UNION ALL SELECT x + 1 FROM c LIMIT 2000) INSERT INTO player (id, name) SELECT x, 'n' FROM c"
            )
        }
        try await waitUntil { queue.statistics(for: request)?.changesNotified == 1 }
    }
}
