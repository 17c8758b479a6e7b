import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

/// Reads its columns by position, as a hot query would.
private struct RankedPlayer: FetchableRecord, Equatable {
    var id: Int64
    var name: String
    var score: Int
    var bonus: Double?

    init(id: Int64, name: String, score: Int, bonus: Double?) {
        self.id = id
        self.name = name
        self.score = score
        self.bonus = bonus
    }

    init(row: RowView) throws {
        id = try row.decode(Int64.self, at: 0)
        name = try row.decode(String.self, at: 1)
        score = try row.decode(Int.self, at: 2)
        bonus = try row.decode(Double?.self, at: 3)
    }
}

/// Reads its columns by name.
private struct Named: FetchableRecord, Equatable {
    var name: String
    var score: Int

    init(row: RowView) throws {
        name = try row.decode(String.self, at: "name")
        score = try row.decode(Int.self, at: "SCORE")
    }
}

/// Both `Decodable` and `FetchableRecord`: `source` tells which one built it.
private struct Both: Decodable, FetchableRecord, Equatable {
    var id: Int
    var source: String

    init(row: RowView) throws {
        id = try row.decode(Int.self, at: 0)
        source = "row"
    }
}

/// Runs its own query again, on the same connection, from `init(row:)`
/// (through a reference handed over by the test), and reads its row again
/// afterwards.
private struct Reentrant: FetchableRecord {
    static let sql = "SELECT column1 FROM (VALUES (1), (2), (3))"
    nonisolated(unsafe) static var database: Database?
    /// Rows read so far: a query that restarts would read forever.
    nonisolated(unsafe) static var reads = 0
    struct Restarted: Error {}

    var before: Int
    var nested: Int?
    var after: Int

    init(row: RowView) throws {
        Reentrant.reads += 1
        if Reentrant.reads > 10 { throw Restarted() }
        before = try row.decode(Int.self, at: 0)
        nested = try Reentrant.database?.fetchOne(Int.self, sql: Reentrant.sql)
        after = try row.decode(Int.self, at: 0)
    }
}

/// Code that knows only `T: Decodable`.
private enum GenericDecodable {
    static func all<T: Decodable>(_ type: T.Type, _ db: Database) throws -> [T] {
        try db.fetchAll(T.self, sql: "SELECT 1 AS id, 'sql' AS source")
    }
    static func one<T: Decodable>(_ type: T.Type, _ db: Database) throws -> T? {
        try db.fetchOne(T.self, sql: "SELECT 2 AS id, 'sql' AS source")
    }
    static func first<T: Decodable>(_ type: T.Type, _ db: Database) throws -> T? {
        try db.fetchCursor(T.self, sql: "SELECT 3 AS id, 'sql' AS source").next()
    }
    static func fromRow<T: Decodable>(_ type: T.Type, _ row: Row) throws -> T { try row.decode(T.self) }
}

@Suite("FetchableRecord: rows read in place by init(row:)")
struct FetchableRecordTests {
    func playerQueue() async throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try await queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL, bonus REAL);
                    INSERT INTO player VALUES (1, 'Arthur', 100, 0.5), (2, 'Barbara', 80, NULL), (3, 'Craig ünï', 50, 2);
                    """)
        }
        return queue
    }

    @Test func fetchAllOneAndCursorReadByPositionAndName() async throws {
        let queue = try await playerQueue()
        let (all, one, none, viaCursor, named) = try await queue.read { db in
            let all = try db.fetchAll(RankedPlayer.self, sql: "SELECT id, name, score, bonus FROM player ORDER BY id")
            let one = try db.fetchOne(
                RankedPlayer.self, sql: "SELECT id, name, score, bonus FROM player WHERE id = ?", arguments: [2])
            let none = try db.fetchOne(
                RankedPlayer.self, sql: "SELECT id, name, score, bonus FROM player WHERE id = 99")
            let cursor = try db.fetchCursor(
                RankedPlayer.self, sql: "SELECT id, name, score, bonus FROM player ORDER BY id DESC")
            var viaCursor: [Int64] = []
            while let player = try cursor.next() { viaCursor.append(player.id) }
            // Names match exactly first, then case-insensitively.
            let named = try db.fetchAll(Named.self, sql: "SELECT score AS Score, name FROM player ORDER BY id")
            return (all, one, none, viaCursor, named)
        }
        #expect(
            all == [
                RankedPlayer(id: 1, name: "Arthur", score: 100, bonus: 0.5),
                RankedPlayer(id: 2, name: "Barbara", score: 80, bonus: nil),
                RankedPlayer(id: 3, name: "Craig ünï", score: 50, bonus: 2),
            ])
        #expect(one == RankedPlayer(id: 2, name: "Barbara", score: 80, bonus: nil))
        #expect(none == nil)
        #expect(viaCursor == [3, 2, 1])
        #expect(named.map(\.name) == ["Arthur", "Barbara", "Craig ünï"])
        #expect(named.map(\.score) == [100, 80, 50])
    }

    @Test func aTypeThatIsAlsoDecodableIsReadByInitRow() async throws {
        let queue = try DatabaseQueue()
        let (all, one, first) = try await queue.read { db in
            let all = try db.fetchAll(Both.self, sql: "SELECT 1 AS id, 'sql' AS source UNION ALL SELECT 2, 'sql'")
            let one = try db.fetchOne(Both.self, sql: "SELECT 3 AS id, 'sql' AS source")
            let first = try db.fetchCursor(Both.self, sql: "SELECT 4 AS id, 'sql' AS source").next()
            return (all, one, first)
        }
        #expect(all.map(\.source) == ["row", "row"])
        #expect(all.map(\.id) == [1, 2])
        #expect(one?.source == "row")
        #expect(first?.id == 4)
    }

    /// Code generic over `Decodable` alone reads such a type by
    /// `init(row:)` too: one type, one way of reading it.
    @Test func genericDecodableCodeReadsARecordByInitRow() async throws {
        let queue = try DatabaseQueue()
        let sources = try await queue.read { db in
            [
                try GenericDecodable.all(Both.self, db).first?.source, try GenericDecodable.one(Both.self, db)?.source,
                try GenericDecodable.first(Both.self, db)?.source,
                try GenericDecodable.fromRow(Both.self, Row(["id": 4, "source": "sql"])).source,
            ]
        }
        #expect(sources == ["row", "row", "row", "row"])
    }

    @Test func viewOffersValuesCountAndACopy() async throws {
        struct Probe: FetchableRecord {
            var count: Int
            var byIndex: DatabaseValue?
            var outOfRange: DatabaseValue?
            var byName: DatabaseValue?
            var missing: DatabaseValue?
            var index: Int?
            var copy: Row

            init(row: RowView) throws {
                count = row.count
                byIndex = row[1]
                outOfRange = row[7]
                byName = row["B"]
                missing = row["nope"]
                index = row.index(of: "c")
                copy = try row.copy()
            }
        }
        let queue = try DatabaseQueue()
        let probes = try await queue.read { db in
            try db.fetchAll(Probe.self, sql: "SELECT 1 AS a, 'two' AS b, x'00ff' AS c UNION ALL SELECT 2, NULL, 2.5")
        }
        try #require(probes.count == 2)
        #expect(probes[0].count == 3)
        #expect(probes[0].byIndex == .text("two"))
        #expect(probes[0].outOfRange == nil)
        #expect(probes[0].byName == .text("two"))
        #expect(probes[0].missing == nil)
        #expect(probes[0].index == 2)
        // Each copy keeps its own row after the statement moved on.
        #expect(probes[0].copy == Row(["a": 1, "b": "two", "c": Data([0, 255])]))
        #expect(probes[1].copy == Row(["a": 2, "b": nil, "c": 2.5]))
        #expect(probes[1].byName == .null)
    }

    /// A fetched `Row` decodes as a record too, through the same
    /// `init(row:)`, by position and by name.
    @Test func aFetchedRowDecodesAsARecord() async throws {
        let queue = try await playerQueue()
        let rows = try await queue.read { db in
            try db.fetchAll(sql: "SELECT id, name, score, bonus FROM player ORDER BY id")
        }
        #expect(try rows.map { try $0.decode(RankedPlayer.self) }.map(\.name) == ["Arthur", "Barbara", "Craig ünï"])
        #expect(try rows[1].decode(RankedPlayer.self).bonus == nil)
        let dana = try Row(["name": "Dana", "Score": 7]).decode(Named.self)
        #expect(dana.name == "Dana" && dana.score == 7)
        #expect(try Row(["id": 5]).decode(Both.self).source == "row")
        #expect(throws: DecodingError.self) { try Row(["name": "Dana"]).decode(Named.self) }
    }

    @Test func wrongColumnsThrowTypedErrorsNamingTheColumn() async throws {
        let queue = try await playerQueue()
        func failure(_ sql: String) async throws -> DecodingError? {
            do {
                _ = try await queue.read { db in try db.fetchAll(RankedPlayer.self, sql: sql) }
                return nil
            } catch let error as DecodingError {
                return error
            }
        }
        // Too few columns: index 3 does not exist.
        guard case .keyNotFound(let key, _)? = try await failure("SELECT id, name, score FROM player") else {
            Issue.record("a missing column is keyNotFound")
            return
        }
        #expect(key.intValue == 3)
        // NULL in a non-optional value.
        guard case .valueNotFound(_, let context)? = try await failure("SELECT id, NULL, score, bonus FROM player")
        else {
            Issue.record("NULL for a non-optional value is valueNotFound")
            return
        }
        #expect(context.codingPath.first?.intValue == 1)
        // Text in an integer.
        guard case .typeMismatch(_, let mismatch)? = try await failure("SELECT id, name, name, bonus FROM player")
        else {
            Issue.record("text for an integer is typeMismatch")
            return
        }
        #expect(mismatch.debugDescription.contains("TEXT"))
        // A missing name names the column.
        do {
            _ = try await queue.read { db in try db.fetchAll(Named.self, sql: "SELECT name FROM player") }
            Issue.record("a missing named column throws")
        } catch DecodingError.keyNotFound(let key, _) {
            #expect(key.stringValue == "SCORE")
        }
    }

    /// A record that throws ends its cursor; the statement is reset, so the
    /// same query runs again from its first row.
    @Test func aThrowingInitEndsTheCursorAndTheQueryRunsAgain() async throws {
        struct Failure: Error {}
        struct FailsOnTwo: FetchableRecord {
            var n: Int
            init(row: RowView) throws {
                n = try row.decode(Int.self, at: 0)
                if n == 2 { throw Failure() }
            }
        }
        let queue = try DatabaseQueue()
        let sql = "SELECT column1 FROM (VALUES (1), (2), (3))"
        let (seen, afterError, again) = try await queue.read { db in
            let cursor = try db.fetchCursor(FailsOnTwo.self, sql: sql)
            var seen: [Int] = []
            do {
                while let value = try cursor.next() { seen.append(value.n) }
                Issue.record("row 2 throws")
            } catch is Failure {}
            let afterError = try cursor.next()
            let again = try db.fetchOne(FailsOnTwo.self, sql: sql)
            return (seen, afterError?.n, again?.n)
        }
        #expect(seen == [1])
        #expect(afterError == nil)
        #expect(again == 1)
    }

    /// A view kept beyond its `init(row:)` reads nothing. It cannot leave
    /// the access closure (it is not `Sendable`), but inside it the
    /// statement has moved on, or runs another query.
    @Test func aKeptViewReadsNothing() async throws {
        struct Keeper: FetchableRecord {
            var view: RowView
            var valueDuringInit: Int
            init(row: RowView) throws {
                view = row
                valueDuringInit = try row.decode(Int.self, at: 0)
            }
        }
        let queue = try DatabaseQueue()
        let sql = "SELECT column1 FROM (VALUES (1), (2))"
        let values = try await queue.read { db in
            let kept = try db.fetchAll(Keeper.self, sql: sql)
            // The cached statement runs again and stands on a row.
            let cursor = try db.fetchCursor(Int.self, sql: sql)
            _ = try cursor.next()
            for keeper in kept {
                #expect(keeper.view[0] == nil)
                #expect(keeper.view["column1"] == nil)
                #expect(keeper.view.index(of: "column1") == nil)
                #expect(keeper.view.count == 1)
                #expect(throws: SQLiteError.self) { try keeper.view.decode(Int.self, at: 0) }
                #expect(throws: SQLiteError.self) { try keeper.view.decode(Int.self, at: "column1") }
                #expect(throws: SQLiteError.self) { try keeper.view.copy() }
            }
            return kept.map(\.valueDuringInit)
        }
        #expect(values == [1, 2])
    }

    /// An observation whose request fetches records tracks their table.
    @Test func anObservedRequestOfRecordsSeesEachCommit() async throws {
        struct Leaders: Queryable {
            static let defaultValue: [String] = []
            func fetch(_ db: Database) throws -> [String] {
                try db.fetchAll(
                    RankedPlayer.self, sql: "SELECT id, name, score, bonus FROM player ORDER BY score DESC LIMIT 2"
                )
                .map(\.name)
            }
        }
        let queue = try await playerQueue()
        try await withTimeout {
            var values = queue.observe(Leaders()).makeAsyncIterator()
            #expect(try await values.next() == ["Arthur", "Barbara"])
            try await queue.write { db in try db.execute(sql: "UPDATE player SET score = 200 WHERE id = 3") }
            #expect(try await values.next() == ["Craig ünï", "Arthur"])
        }
    }

    /// A record whose `init(row:)` runs the same SQL again on the same
    /// connection: the nested query gets a statement of its own, so the
    /// outer one keeps its row and goes on from it (sharing the cached
    /// statement reset it under the view, which then read `NULL`, and
    /// restarted the outer query).
    @Test func aNestedRunOfTheSameQueryLeavesTheOuterRowInPlace() async throws {
        let queue = try DatabaseQueue()
        let records = try await withTimeout {
            try await queue.read { db in
                Reentrant.database = db
                defer { Reentrant.database = nil }
                return try db.fetchAll(Reentrant.self, sql: Reentrant.sql).map { [$0.before, $0.nested, $0.after] }
            }
        }
        #expect(records == [[1, 1, 1], [2, 1, 2], [3, 1, 3]])
    }

    /// Names resolve as `Row.index(of:)` does: the exact name first, then the
    /// first column that matches case-insensitively, whatever the other
    /// columns are called; `Decodable` properties too.
    @Test func columnsThatDifferOnlyByCaseResolveAsInRow() async throws {
        struct Lookup: FetchableRecord {
            var indexes: [Int?]
            init(row: RowView) throws {
                indexes = ["name", "Name", "NAME", "nAmE"].map { row.index(of: $0) }
            }
        }
        struct Named: Decodable { var name: Int }
        let queue = try DatabaseQueue()
        let sql = "SELECT 1 AS NAME, 2 AS Name, 3 AS name"
        let (viewIndexes, rowIndexes, decoded) = try await withTimeout {
            try await queue.read { db in
                let sqlWithoutLowercase = "SELECT 1 AS NAME, 2 AS Name"
                return (
                    [
                        try db.fetchOne(Lookup.self, sql: sql)!.indexes,
                        try db.fetchOne(Lookup.self, sql: sqlWithoutLowercase)!.indexes,
                    ],
                    [try db.fetchOne(sql: sql)!, try db.fetchOne(sql: sqlWithoutLowercase)!].map { row in
                        ["name", "Name", "NAME", "nAmE"].map { row.index(of: $0) }
                    },
                    try db.fetchOne(Named.self, sql: sqlWithoutLowercase)!.name
                )
            }
        }
        #expect(rowIndexes == [[2, 1, 0, 0], [0, 1, 0, 0]])
        #expect(viewIndexes == rowIndexes)
        #expect(decoded == 1)
    }

    /// Another connection adds a column: SQLite re-prepares the reader's
    /// cached statement at its first step, and the view reads the new
    /// columns (it was built from the columns before that step).
    @Test func aViewSeesTheColumnsOfAStatementReprepared() async throws {
        struct Columns: FetchableRecord {
            var count: Int
            var b: Int?
            var copy: Row
            init(row: RowView) throws {
                count = row.count
                b = try row.decode(Int?.self, at: "b")
                copy = try row.copy()
            }
        }
        struct Decoded: Decodable { var a: Int; var b: Int }
        try await withTemporaryDirectory { directory in
            var configuration = Configuration()
            configuration.maximumReaderCount = 1
            let pool = try DatabasePool(path: directory.file("db.sqlite"), configuration: configuration)
            try await withTimeout {
                try await pool.write { db in try db.execute(sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)") }
                let before = try await pool.read { db in try db.fetchCursor(sql: "SELECT * FROM t").next() }
                #expect(before?.columnNames == ["a"])
                try await pool.write { db in try db.execute(sql: "ALTER TABLE t ADD COLUMN b DEFAULT 2") }
                let (record, decoded) = try await pool.read { db in
                    (
                        try db.fetchOne(Columns.self, sql: "SELECT * FROM t"),
                        try db.fetchOne(Decoded.self, sql: "SELECT * FROM t")
                    )
                }
                #expect(record?.count == 2)
                #expect(record?.b == 2)
                #expect(record?.copy == Row(["a": 1, "b": 2]))
                #expect(decoded?.b == 2)
            }
        }
    }

}
