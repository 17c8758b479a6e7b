@testable import DBWatch
import DBWatchTestSupport
import Testing

/// Precision down to rows: a query that selects rows by primary key does
/// not refetch for writes to other rows.
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

    @Test func aOneRowWriteNotifiesOnlyTheObservationsOfThatRowAmongMany() async throws {
        let queue = try await makePlayerQueue()
        try await queue.write { db in
            try db.execute(
                sql:
                    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 40) INSERT INTO player (id, name, score) SELECT x, 'p' || x, 0 FROM c"
            )
        }
        let rows = Array(1...40)
        let requests = rows.map { SQLRequest("SELECT name, score FROM player WHERE id = ?", arguments: [$0]) }
        // Rows 3 and 7 in one request (a region of two rowids), and the whole table.
        let twoRows = TwoRowsRequest(first: 3, second: 7)
        let everyRow = IntRequest("SELECT sum(score) FROM player")
        var tasks: [Task<Void, Never>] = []
        defer { for task in tasks { task.cancel() } }
        for request in requests {
            let (values, task) = record(queue.observe(request))
            tasks.append(task)
            try await values.wait(forCount: 1)
        }
        let (twoRowValues, twoRowTask) = record(queue.observe(twoRows))
        tasks.append(twoRowTask)
        try await twoRowValues.wait(forCount: 1)
        let (sums, sumTask) = record(queue.observe(everyRow))
        tasks.append(sumTask)
        try await sums.wait(forCount: 1)

        try await queue.write { db in try db.execute(sql: "UPDATE player SET score = 1 WHERE id = 7") }
        try await waitUntil { queue.statistics(for: everyRow)?.changesNotified == 1 }
        try await waitUntil { queue.statistics(for: requests[6])?.changesNotified == 1 }
        #expect(queue.statistics(for: twoRows)?.changesNotified == 0)  // it reads names only
        for (index, request) in requests.enumerated() where index != 6 {
            #expect(queue.statistics(for: request)?.changesNotified == 0, "row \(rows[index])")
        }
        // A change of the name only: the row's observation reads it, the sum does not.
        try await queue.write { db in try db.execute(sql: "UPDATE player SET name = 'x' WHERE id = 3") }
        try await waitUntil { queue.statistics(for: requests[2])?.changesNotified == 1 }
        try await waitUntil { queue.statistics(for: twoRows)?.changesNotified == 1 }
        #expect(queue.statistics(for: everyRow)?.changesNotified == 1)
        // Several rows at once, more than the observations of single rows:
        // every observation of a changed row refetches.
        try await queue.write { db in try db.execute(sql: "UPDATE player SET score = 2 WHERE id % 2 = 0") }
        for (index, request) in requests.enumerated() {
            let expected = (rows[index] == 7 ? 1 : 0) + (rows[index] == 3 ? 1 : 0) + (rows[index] % 2 == 0 ? 1 : 0)
            try await waitUntil { queue.statistics(for: request)?.changesNotified == expected }
        }
        try await waitUntil { queue.statistics(for: everyRow)?.changesNotified == 2 }
        #expect(queue.statistics(for: twoRows)?.changesNotified == 1)
    }

    @Test func theRowIndexVisitsWhatAChangeCanModify() {
        var observers = TableObservers()
        let score = ColumnSet.columns(["score"])
        let name = ColumnSet.columns(["name"])
        let objects = (0..<5).map { _ in Marker() }
        let id = objects.map { ObjectIdentifier($0) }
        observers.insert(id[0], read: TableRegion(columns: .all, rows: .one(1)))
        observers.insert(id[1], read: TableRegion(columns: score, rows: .one(2)))
        observers.insert(id[2], read: TableRegion(columns: name, rows: .many([1, 2, 3])))
        observers.insert(id[3], read: TableRegion(columns: score, rows: nil))
        observers.insert(id[4], read: TableRegion(columns: .all, rows: .one(9)))

        func touched(_ change: TableChange) -> Set<ObjectIdentifier> {
            var result: Set<ObjectIdentifier> = []
            observers.forEachTouched(by: change) { result.insert($0) }
            return result
        }
        func change(_ columns: ColumnSet, _ rows: RowSet?) -> TableChange {
            var change = TableChange(columns: columns, rowID: nil)
            change.rowIDs = rows
            return change
        }
        #expect(touched(change(score, .one(2))) == [id[1], id[3]])
        #expect(touched(change(name, .one(2))) == [id[2]])
        #expect(touched(change(.all, .one(1))) == [id[0], id[2], id[3]])
        #expect(touched(change(.all, .many([3, 9]))) == [id[2], id[3], id[4]])
        #expect(touched(change(.all, .many(Set(1...100)))) == Set(id))  // more rows than observations: a scan
        #expect(touched(change(name, nil)) == [id[0], id[2], id[4]])  // unknown rows
        #expect(touched(change(.all, .one(50))) == [id[3]])

        // Replacing a read unindexes the old rows; removing unindexes all.
        observers.insert(id[2], read: TableRegion(columns: name, rows: .one(50)))
        #expect(touched(change(.all, .one(3))) == [id[3]])
        #expect(touched(change(.all, .one(50))) == [id[2], id[3]])
        for identifier in id { observers.remove(identifier) }
        #expect(observers.isEmpty)
        #expect(touched(change(.all, nil)).isEmpty)
        withExtendedLifetime(objects) {}
    }
}

/// An object whose identity stands for an observation.
private final class Marker {}

/// Rows `first` and `second` of `player`, read by two lookups: a region of
/// two rowids.
private struct TwoRowsRequest: Queryable {
    static var defaultValue: [String] { [] }
    var first: Int
    var second: Int
    func fetch(_ db: Database) throws -> [String] {
        try [first, second].compactMap { id in
            try db.fetchOne(String.self, sql: "SELECT name FROM player WHERE id = ?", arguments: [id])
        }
    }
}
