import DBWatch
import DBWatchTestSupport
import Testing

/// How a write learns the id of a row it inserted: `INSERT … RETURNING id`
/// fetched inside `write`, whose closure returns it, or
/// `lastInsertedRowID`. The CoreAPI article shows both.
@Suite("The ids of inserted rows")
struct InsertedRowIDTests {
    @Test(arguments: DatabaseKind.allCases)
    func returningGivesTheNewRowsIdsAndTheInsertReachesObservers(kind: DatabaseKind) async throws {
        try await withTimeout {
            try await withDatabase(kind, schema: playerSchema) { database in
                var names = database.observe(PlayerNames()).makeAsyncIterator()
                #expect(try await names.next() == [])

                let id = try await database.write { db in
                    try db.fetchOne(
                        Int64.self, sql: "INSERT INTO player (name, score) VALUES (?, ?) RETURNING id",
                        arguments: ["Arthur", 100])
                }
                #expect(id == 1)
                // A commit made by a statement that returns rows is a write like any other.
                #expect(try await names.next() == ["Arthur"])

                let ids = try await database.write { db in
                    try db.fetchAll(
                        Int64.self, sql: "INSERT INTO player (name) VALUES ('Barbara'), ('Craig') RETURNING id")
                }
                #expect(ids == [2, 3])
                #expect(try await names.next() == ["Arthur", "Barbara", "Craig"])

                let last = try await database.write { db in
                    try db.execute(sql: "INSERT INTO player (name) VALUES (?)", arguments: ["Dora"])
                    return db.lastInsertedRowID
                }
                #expect(last == 4)
                #expect(try await names.next() == ["Arthur", "Barbara", "Craig", "Dora"])
            }
        }
    }
}
