import DBWatch
import Foundation
import Testing

@Suite("Values round-trip")
struct ValueTests {
    /// Binds `value`, stores it, reads it back as `T` and as a raw value.
    func roundTrip<T: DatabaseValueConvertible & Decodable & Equatable>(_ value: T) async throws -> T? {
        let queue = try DatabaseQueue()
        return try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (v)")
            try db.execute(sql: "INSERT INTO t (v) VALUES (?)", arguments: [value])
            return try db.fetchOne(T.self, sql: "SELECT v FROM t")
        }
    }

    @Test func integers() async throws {
        #expect(try await roundTrip(Int64.min) == Int64.min)
        #expect(try await roundTrip(Int64.max) == Int64.max)
        #expect(try await roundTrip(Int(-42)) == -42)
        #expect(try await roundTrip(Int32.max) == Int32.max)
        #expect(try await roundTrip(UInt8(255)) == 255)
        #expect(try await roundTrip(Int8.min) == Int8.min)
        #expect(try await roundTrip(UInt32.max) == UInt32.max)
    }

    @Test func doubles() async throws {
        #expect(try await roundTrip(Double.infinity) == .infinity)
        #expect(try await roundTrip(-Double.infinity) == -.infinity)
        #expect(try await roundTrip(Double.leastNonzeroMagnitude) == .leastNonzeroMagnitude)
        #expect(try await roundTrip(-0.5) == -0.5)
        #expect(try await roundTrip(Float(1.5)) == 1.5)
    }

    @Test func nanIsStoredAsNull() async throws {
        let queue = try DatabaseQueue()
        let stored = try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (v)")
            try db.execute(sql: "INSERT INTO t (v) VALUES (?)", arguments: [Double.nan])
            return try db.fetchOne(sql: "SELECT v FROM t")![0]
        }
        #expect(stored == .null)
        await #expect(throws: DecodingError.self) {
            try await queue.read { db in try db.fetchAll(Double.self, sql: "SELECT v FROM t") }
        }
    }

    /// `fetchOne` of a single value is `nil` for `NULL` as for no row (as in
    /// GRDB): `max(…)` of an empty table is the common case.
    @Test func aNullSingleValueIsNil() async throws {
        struct Named: Decodable { var v: Int }
        let queue = try DatabaseQueue()
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (v INTEGER)")
            #expect(try db.fetchOne(Int.self, sql: "SELECT max(v) FROM t") == nil)
            #expect(try db.fetchOne(String.self, sql: "SELECT NULL") == nil)
            // An optional type keeps NULL (`.some(nil)`) apart from no row (`nil`).
            #expect(try db.fetchOne(Int?.self, sql: "SELECT NULL") == .some(nil))
            #expect(try db.fetchOne(Int?.self, sql: "SELECT 1 WHERE 0") == .none)
            // Elsewhere NULL in a non-optional value is still an error.
            #expect { try db.fetchAll(Int.self, sql: "SELECT NULL AS best") } throws: { error in
                "\(error)".contains("cannot decode Int from NULL in column best")
            }
            #expect(throws: DecodingError.self) { try db.fetchOne(Named.self, sql: "SELECT NULL AS v") }
            try db.execute(sql: "INSERT INTO t (v) VALUES (7)")
            #expect(try db.fetchOne(Int.self, sql: "SELECT max(v) FROM t") == 7)
        }
    }

    @Test func hostileStrings() async throws {
        for text in ["it's", "'; DROP TABLE t;--", "a\0b\0", "", "é🎉\u{0}", String(repeating: "x", count: 100_000)] {
            #expect(try await roundTrip(text) == text)
        }
    }

    @Test func blobs() async throws {
        #expect(try await roundTrip(Data()) == Data())
        #expect(try await roundTrip(Data([0, 1, 2, 0, 255])) == Data([0, 1, 2, 0, 255]))
        // 16 MiB of a 256-byte pattern, built by whole blocks: byte by byte
        // it held a cooperative thread for 12 s under the thread sanitizer.
        let block = Data((0..<256).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        var big = Data(capacity: 16 * 1024 * 1024)
        for _ in 0..<(16 * 1024 * 1024 / block.count) { big.append(block) }
        #expect(try await roundTrip(big) == big)
    }

    @Test func emptyBlobIsNotNull() async throws {
        let queue = try DatabaseQueue()
        let type = try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (v)")
            try db.execute(sql: "INSERT INTO t (v) VALUES (?)", arguments: [Data()])
            return try db.fetchOne(String.self, sql: "SELECT typeof(v) FROM t")
        }
        #expect(type == "blob")
    }

    @Test func boolsAndOptionals() async throws {
        #expect(try await roundTrip(true) == true)
        #expect(try await roundTrip(false) == false)
        #expect(try await roundTrip(String?.none) == .some(nil))
        #expect(try await roundTrip(Int?.some(3)) == .some(3))
    }

    @Test func rawDatabaseValues() async throws {
        let queue = try DatabaseQueue()
        let row = try await queue.read { db in
            try db.fetchOne(sql: "SELECT NULL, 1, 1.5, 'a', x'00ff'")!
        }
        #expect(row.values == [.null, .integer(1), .real(1.5), .text("a"), .blob(Data([0, 255]))])
        #expect(row[3] == .text("a"))
        #expect(DatabaseValue.text("it's").description == "'it''s'")
    }

    @Test func typedAccessNeverSilentlyNil() async throws {
        let queue = try DatabaseQueue()
        let row = try await queue.read { db in
            try db.fetchOne(sql: "SELECT 1 AS id, 'x' AS name, NULL AS gone, 300 AS big")!
        }
        #expect(try row.decode(Int.self, at: "ID") == 1)
        #expect(try row.decode(String.self, at: 1) == "x")
        #expect(try row.decode(String?.self, at: "gone") == nil)
        #expect(row["missing"] == nil)
        #expect(throws: DecodingError.self) { try row.decode(String.self, at: "id") }  // integer is not text
        #expect(throws: DecodingError.self) { try row.decode(Int.self, at: "name") }
        #expect(throws: DecodingError.self) { try row.decode(Int.self, at: "gone") }  // NULL
        #expect(throws: DecodingError.self) { try row.decode(Int.self, at: "missing") }
        #expect(throws: DecodingError.self) { try row.decode(Int.self, at: 7) }
        #expect(throws: DecodingError.self) { try row.decode(UInt8.self, at: "big") }  // out of range
    }

    @Test func decodableRows() async throws {
        struct Item: Decodable, Equatable {
            enum Kind: String, Decodable { case small, large }
            var id: Int
            var label: String
            var weight: Double
            var kind: Kind
            var note: String?
            var payload: Data
            var flag: Bool
        }
        let queue = try DatabaseQueue()
        let items = try await queue.read { db in
            try db.fetchAll(
                Item.self,
                sql:
                    "SELECT 1 AS id, 'a' AS label, 2 AS weight, 'large' AS kind, NULL AS note, x'01' AS payload, 1 AS flag"
            )
        }
        #expect(items == [Item(id: 1, label: "a", weight: 2, kind: .large, note: nil, payload: Data([1]), flag: true)])
        await #expect(throws: DecodingError.self) {
            try await queue.read { db in try db.fetchAll(Item.self, sql: "SELECT 1 AS id") }
        }
        await #expect(throws: DecodingError.self) {
            try await queue.read { db in
                try db.fetchOne(
                    Item.self,
                    sql:
                        "SELECT 'x' AS id, 'a' AS label, 2 AS weight, 'large' AS kind, NULL AS note, x'01' AS payload, 1 AS flag"
                )
            }
        }
    }

    @Test func numbersBeyondTheTargetTypeThrow() async throws {
        struct Measure: Decodable { var value: Float }
        struct Small: Decodable { var value: Int8 }
        struct Narrow: Decodable { var value: String?, extra: Int? }
        let queue = try DatabaseQueue()
        try await queue.read { db in
            #expect(try db.fetchOne(Measure.self, sql: "SELECT 1.5 AS value")?.value == 1.5)
            #expect(throws: DecodingError.self) { try db.fetchOne(Measure.self, sql: "SELECT 1e300 AS value") }
            #expect(throws: DecodingError.self) { try db.fetchOne(Float.self, sql: "SELECT 1e300") }
            #expect(throws: DecodingError.self) { try db.fetchOne(Small.self, sql: "SELECT 300 AS value") }
            // Infinity itself is a Float.
            #expect(try db.fetchOne(Float.self, sql: "SELECT 9e999") == .infinity)
            // An optional property with no column is nil (documented).
            let narrow = try db.fetchOne(Narrow.self, sql: "SELECT 'a' AS value")
            #expect(narrow?.value == "a" && narrow?.extra == nil)
        }
    }

    /// A type with dynamic keys sees the row's columns: a dictionary row
    /// was silently empty, since the keyed container listed no key.
    @Test func dynamicKeysAreTheColumnNames() async throws {
        /// Keeps the columns whose names start with "x_".
        struct Prefixed: Decodable, Equatable {
            var values: [String: Int]
            struct Key: CodingKey {
                var stringValue: String
                var intValue: Int? { nil }
                init?(stringValue: String) { self.stringValue = stringValue }
                init?(intValue: Int) { return nil }
            }
            init(values: [String: Int]) { self.values = values }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: Key.self)
                var values: [String: Int] = [:]
                for key in container.allKeys where key.stringValue.hasPrefix("x_") {
                    values[key.stringValue] = try container.decode(Int.self, forKey: key)
                }
                self.values = values
            }
        }
        let queue = try DatabaseQueue()
        let (dictionaries, optionals, prefixed, fromRow) = try await queue.read { db in
            (
                try db.fetchAll([String: Int].self, sql: "SELECT 1 AS a, 2 AS b UNION ALL SELECT 3, 4"),
                try db.fetchOne([String: String?].self, sql: "SELECT 'x' AS a, NULL AS b"),
                try db.fetchOne(Prefixed.self, sql: "SELECT 1 AS x_a, 2 AS b, 3 AS x_c"),
                try db.fetchOne(sql: "SELECT 5 AS a")!.decode([String: Int].self)
            )
        }
        #expect(dictionaries == [["a": 1, "b": 2], ["a": 3, "b": 4]])
        let withNull: [String: String?] = ["a": "x", "b": nil]
        #expect(optionals == withNull)
        #expect(prefixed == Prefixed(values: ["x_a": 1, "x_c": 3]))
        #expect(fromRow == ["a": 5])
    }

    @Test func manyRowsReuseOneDecoderCorrectly() async throws {
        struct Entry: Decodable, Equatable {
            var id: Int
            var name: String
            var score: Double?
        }
        struct Other: Decodable, Equatable {
            var score: Double
        }
        let queue = try DatabaseQueue()
        let (entries, interleaved, viaRow) = try await queue.write { db in
            try db.execute(sql: "CREATE TABLE e (ID INTEGER PRIMARY KEY, Name TEXT, Score REAL)")
            try db.execute(sql: "INSERT INTO e VALUES (1, '', 1.5), (2, 'two', NULL), (3, 'trois ünï', 3)")
            // Column names differ in case from the property names.
            let entries = try db.fetchAll(Entry.self, sql: "SELECT * FROM e ORDER BY ID")
            // Two cursors of different types stepping in turn.
            let first = try db.fetchCursor(Entry.self, sql: "SELECT * FROM e ORDER BY ID")
            let second = try db.fetchCursor(Other.self, sql: "SELECT 10.5 AS score UNION ALL SELECT 20")
            var interleaved: [String] = []
            while true {
                let entry = try first.next()
                let other = try second.next()
                if entry == nil && other == nil { break }
                interleaved.append("\(entry?.name ?? "-")/\(other?.score ?? -1)")
            }
            let row = try db.fetchOne(sql: "SELECT 4 AS id, 'four' AS name, NULL AS score")
            return (entries, interleaved, try row?.decode(Entry.self))
        }
        #expect(
            entries == [
                Entry(id: 1, name: "", score: 1.5), Entry(id: 2, name: "two", score: nil),
                Entry(id: 3, name: "trois ünï", score: 3),
            ])
        #expect(interleaved == ["/10.5", "two/20.0", "trois ünï/-1.0"])
        #expect(viaRow == Entry(id: 4, name: "four", score: nil))
    }

    /// Two cursors of one SQL made before either steps get a statement
    /// each: the second binds its own arguments and steps its own rows.
    @Test func cursorsOfTheSameSQLDoNotShareTheirStatement() async throws {
        let queue = try DatabaseQueue()
        let sql = "SELECT value * ? FROM json_each('[1, 2, 3]')"
        let (rows, records, values, again) = try await queue.read { db in
            let first = try db.fetchCursor(sql: sql, arguments: [1])
            let second = try db.fetchCursor(sql: sql, arguments: [10])
            var rows: [Int] = []
            while let a = try first.next(), let b = try second.next() {
                rows += [try a.decode(Int.self, at: 0), try b.decode(Int.self, at: 0)]
            }
            let firstValues = try db.fetchCursor(Int.self, sql: sql, arguments: [2])
            let secondValues = try db.fetchCursor(Int.self, sql: sql, arguments: [20])
            var values: [Int] = []
            while let a = try firstValues.next(), let b = try secondValues.next() { values += [a, b] }
            // While a cursor holds the statement, fetchAll runs its own.
            let held = try db.fetchCursor(Int.self, sql: sql, arguments: [3])
            let records = try db.fetchAll(Int.self, sql: sql, arguments: [30])
            let heldValues = [try held.next(), try held.next(), try held.next(), try held.next()]
            // Once the cursors are over, the cached statement serves again.
            return (
                rows, records + heldValues.map { $0 ?? -1 }, values, try db.fetchAll(Int.self, sql: sql, arguments: [4])
            )
        }
        #expect(rows == [1, 10, 2, 20, 3, 30])
        #expect(values == [2, 20, 4, 40, 6, 60])
        #expect(records == [30, 60, 90, 3, 6, 9, -1])
        #expect(again == [4, 8, 12])
    }

    @Test func failingCursorEndsAndItsStatementRunsAgain() async throws {
        struct Number: Decodable { var n: Int }
        let queue = try DatabaseQueue()
        // Row 2 fails inside SQLite (integer overflow); row 3 of the other
        // query fails to decode (text in an integer property).
        let sqliteFailure =
            "SELECT CASE WHEN x = 2 THEN abs(-9223372036854775807 - 1) ELSE x END AS n FROM (SELECT 1 AS x UNION ALL SELECT 2 UNION ALL SELECT 3)"
        let decodeFailure = "SELECT column1 AS n FROM (VALUES (1), (2), ('three'), (4))"
        let outcome = try await queue.read { db in
            var seen: [Int] = []
            var errors: [String] = []
            for sql in [sqliteFailure, decodeFailure] {
                let cursor = try db.fetchCursor(Number.self, sql: sql)
                do {
                    while let number = try cursor.next() { seen.append(number.n) }
                } catch let error as SQLiteError {
                    errors.append("sqlite \(error.code == .error)")
                } catch is DecodingError {
                    errors.append("decoding")
                }
                // After an error the cursor is over: it does not restart the query.
                #expect(try cursor.next() == nil)
            }
            // The cached statements are usable again.
            let again = try db.fetchAll(Int.self, sql: "SELECT column1 FROM (VALUES (7))")
            let retry = try? db.fetchAll(Number.self, sql: decodeFailure)
            return (seen, errors, again, retry == nil)
        }
        #expect(outcome.0 == [1, 1, 2])
        #expect(outcome.1 == ["sqlite true", "decoding"])
        #expect(outcome.2 == [7])
        #expect(outcome.3)
    }

    @Test func singleValues() async throws {
        let queue = try await makePlayerQueue()
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO player (name, score) VALUES ('a', 1), ('b', 2), ('c', 3)")
        }
        let (names, total, missing, optional) = try await queue.read { db in
            (
                try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY id"),
                try db.fetchOne(Int.self, sql: "SELECT sum(score) FROM player"),
                try db.fetchOne(Int.self, sql: "SELECT score FROM player WHERE id = 99"),
                try db.fetchAll(String?.self, sql: "SELECT NULL UNION ALL SELECT 'x'")
            )
        }
        #expect(names == ["a", "b", "c"])
        #expect(total == 6)
        #expect(missing == nil)
        #expect(optional == [nil, "x"])
    }

    @Test func cursorsStepWithoutArrays() async throws {
        let queue = try DatabaseQueue()
        let (sum, firstRows) = try await queue.read { db in
            let cursor = try db.fetchCursor(
                Int.self,
                sql: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100000) SELECT x FROM c")
            var sum = 0
            while let value = try cursor.next() { sum += value }
            // A cursor dropped early resets its statement; the next one starts over.
            var firstRows: [Int] = []
            for _ in 0..<2 {
                let rows = try db.fetchCursor(sql: "SELECT 1 UNION ALL SELECT 2")
                firstRows.append(try rows.next()!.decode(Int.self, at: 0))
            }
            return (sum, firstRows)
        }
        #expect(sum == 100_000 * 100_001 / 2)
        #expect(firstRows == [1, 1])
    }
}
