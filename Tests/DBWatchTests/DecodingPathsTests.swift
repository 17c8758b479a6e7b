import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

/// Probes of everything that turns rows into Swift values: each path
/// (single value, struct property, generic property, `Row.decode`) must
/// give the same value or the same typed error.
@Suite("Decoding: every path gives the same value or error")
struct DecodingPathsTests {
    struct Box<T: Decodable>: Decodable { var v: T }

    func inMemory<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let queue = try DatabaseQueue()
        return try await withTimeout { try await queue.write(body) }
    }

    /// `Row.decode(T.self)` without a column reads a single value as the
    /// fetch methods do: through `DatabaseValueConvertible`, not the type's
    /// own `Decodable` form.
    @Test func rowDecodeOfASingleValueAgreesWithFetch() async throws {
        try await inMemory { db in
            let row = try db.fetchOne(sql: "SELECT 0 AS v, '2001-01-01 00:00:00.000' AS t")!
            let fetched = try db.fetchOne(Date.self, sql: "SELECT 0")
            #expect(fetched == Date(timeIntervalSince1970: 0))
            #expect(try row.decode(Date.self) == Date(timeIntervalSince1970: 0))
            let uuid = UUID()
            let uuidRow = try db.fetchOne(sql: "SELECT ?", arguments: [uuid])!
            #expect(try uuidRow.decode(UUID.self) == uuid)
            let decimalRow = try db.fetchOne(sql: "SELECT '1.5'")!
            #expect(try decimalRow.decode(Decimal.self) == Decimal(string: "1.5"))
            let urlRow = try db.fetchOne(sql: "SELECT 'https://example.com' AS relative")!
            #expect(try urlRow.decode(URL.self) == URL(string: "https://example.com"))
        }
    }

    /// Bool from a real: the same answer as a single value, a property, a
    /// generic property and a `Row` value.
    @Test func boolFromARealAgreesOnEveryPath() async throws {
        struct Flag: Decodable { var v: Bool }
        try await inMemory { db in
            for sql in ["SELECT 1.0 AS v", "SELECT 0.0 AS v", "SELECT -0.0 AS v", "SELECT 0.5 AS v"] {
                let single = try? db.fetchOne(Bool.self, sql: sql)
                let property = try? db.fetchOne(Flag.self, sql: sql)?.v
                let generic = try? db.fetchOne(Box<Bool>.self, sql: sql)?.v
                let row = try? db.fetchOne(sql: sql)!.decode(Bool.self, at: 0)
                #expect(single == property, "\(sql)")
                #expect(single == generic, "\(sql)")
                #expect(single == row, "\(sql)")
            }
            for sql in ["SELECT 2 AS v", "SELECT -1 AS v", "SELECT 0 AS v"] {
                let single = try db.fetchOne(Bool.self, sql: sql)
                #expect(try db.fetchOne(Flag.self, sql: sql)?.v == single)
                #expect(try db.fetchOne(Box<Bool>.self, sql: sql)?.v == single)
            }
        }
    }

    /// Every integer type at its edges, and reals, through each path.
    @Test func integerEdgesAgreeOnEveryPath() async throws {
        @Sendable func check<T: Decodable & Equatable & Sendable>(_ type: T.Type, _ db: Database) throws {
            let values = [
                "9223372036854775807", "-9223372036854775808", "0", "-1", "255", "256", "-129", "-128", "127",
                "65535", "65536", "-32769", "4294967295", "4294967296", "2147483648", "-2147483649", "1.0",
                "1.5", "-0.0", "9.3e18", "-9.3e18", "9.223372036854775807e18", "'1'", "NULL", "x'01'",
            ]
            for value in values {
                let sql = "SELECT \(value) AS v"
                let single = Result { try db.fetchAll(T.self, sql: sql).first }
                let generic = Result { try db.fetchAll(Box<T>.self, sql: sql).first?.v }
                let row = Result { try db.fetchOne(sql: sql)!.decode(Box<T>.self).v }
                #expect(
                    (try? single.get()) == (try? generic.get()), "\(T.self) \(value): \(single) vs \(generic)")
                #expect((try? single.get()) == (try? row.get()), "\(T.self) \(value): \(single) vs \(row)")
            }
        }
        try await inMemory { db in
            try check(Int.self, db)
            try check(Int8.self, db)
            try check(Int16.self, db)
            try check(Int32.self, db)
            try check(Int64.self, db)
            try check(UInt.self, db)
            try check(UInt8.self, db)
            try check(UInt16.self, db)
            try check(UInt32.self, db)
            try check(UInt64.self, db)
            try check(Double.self, db)
            try check(Float.self, db)
            try check(String.self, db)
            try check(Data.self, db)
        }
    }

    /// Keys asked for conditionally, in another order, twice, through
    /// `contains` and `decodeIfPresent`: the per-position key cache never
    /// answers with another key's column.
    @Test func conditionalKeysReadTheirOwnColumns() async throws {
        struct Shape: Decodable, Equatable {
            var kind: Int
            var value: String
            var extra: String?
            enum CodingKeys: String, CodingKey { case kind, a, b, c, missing }
            init(kind: Int, value: String, extra: String?) {
                (self.kind, self.value, self.extra) = (kind, value, extra)
            }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                kind = try container.decode(Int.self, forKey: .kind)
                switch kind {
                case 0:
                    value = try container.decode(String.self, forKey: .a)
                    extra = try container.decodeIfPresent(String.self, forKey: .b)
                case 1:
                    extra = try container.decodeIfPresent(String.self, forKey: .missing)
                    value = try container.decode(String.self, forKey: .b)
                case 2:
                    _ = container.contains(.c)
                    value =
                        try container.decode(String.self, forKey: .c) + (try container.decode(String.self, forKey: .c))
                    extra = try container.decodeIfPresent(String.self, forKey: .a)
                default:
                    value = try container.decode(String.self, forKey: .c)
                    extra = try container.decode(String.self, forKey: .b)
                }
            }
        }
        let shapes = try await inMemory { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, kind, a, b, c)")
            for kind in [0, 1, 2, 3, 0, 2, 1, 3, 3, 0] {
                try db.execute(
                    sql: "INSERT INTO t (kind, a, b, c) VALUES (?, 'a' || ?, 'b' || ?, 'c' || ?)",
                    arguments: [kind, kind, kind, kind])
            }
            return try db.fetchAll(Shape.self, sql: "SELECT kind, a, b, c FROM t ORDER BY id")
        }
        let expected: [Shape] = [0, 1, 2, 3, 0, 2, 1, 3, 3, 0].map { kind in
            switch kind {
            case 0: Shape(kind: 0, value: "a0", extra: "b0")
            case 1: Shape(kind: 1, value: "b1", extra: nil)
            case 2: Shape(kind: 2, value: "c2c2", extra: "a2")
            default: Shape(kind: 3, value: "c3", extra: "b3")
            }
        }
        #expect(shapes == expected)
    }

    /// Another connection drops and re-creates the table with its columns
    /// in another order: `SELECT *` re-prepared reads each column by name.
    @Test func aTableRecreatedInAnotherOrderDecodesByName() async throws {
        struct Pair: Decodable, Equatable { var a: Int; var b: String }
        struct Record: FetchableRecord, Equatable {
            var a: Int
            var b: String
            init(row: RowView) throws {
                a = try row.decode(Int.self, at: "a")
                b = try row.decode(String.self, at: "b")
            }
        }
        try await withTemporaryDirectory { directory in
            var configuration = Configuration()
            configuration.maximumReaderCount = 1
            let pool = try DatabasePool(path: directory.file("db.sqlite"), configuration: configuration)
            try await withTimeout {
                try await pool.write { db in try db.execute(sql: "CREATE TABLE t (a, b); INSERT INTO t VALUES (1, 'x')")
                }
                let before = try await pool.read { db in
                    let cursor = try db.fetchCursor(Pair.self, sql: "SELECT * FROM t")
                    _ = try cursor.next()
                    return try db.fetchAll(Pair.self, sql: "SELECT * FROM t")
                }
                #expect(before == [Pair(a: 1, b: "x")])
                try await pool.write { db in
                    try db.execute(sql: "DROP TABLE t; CREATE TABLE t (c, b, a); INSERT INTO t VALUES (0, 'y', 2)")
                }
                let after = try await pool.read { db in
                    (
                        try db.fetchAll(Pair.self, sql: "SELECT * FROM t"),
                        try db.fetchCursor(Pair.self, sql: "SELECT * FROM t").next(),
                        try db.fetchOne(sql: "SELECT * FROM t")?.decode(Pair.self),
                        try db.fetchOne(Record.self, sql: "SELECT * FROM t"),
                        try db.fetchAll([String: Int].self, sql: "SELECT a, c FROM t")
                    )
                }
                #expect(after.0 == [Pair(a: 2, b: "y")])
                #expect(after.1 == Pair(a: 2, b: "y"))
                #expect(after.2 == Pair(a: 2, b: "y"))
                #expect(after.3?.a == 2 && after.3?.b == "y")
                #expect(after.4 == [["a": 2, "c": 0]])
            }
        }
    }

    /// Column names: duplicates and case differences resolve as `Row`
    /// does; expressions and unicode aliases are keys.
    @Test func columnNamesResolveAsInRow() async throws {
        struct Named: Decodable {
            var lower: Int
            var upper: Int
            var accented: Int
            var underscored: Int?
            enum CodingKeys: String, CodingKey {
                case lower = "a", upper = "A", accented = "é", underscored = "x_y"
            }
        }
        try await inMemory { db in
            let sql = #"SELECT 1 AS A, 2 AS a, 3 AS a, 4 AS "é", 5 AS "x y""#
            let row = try db.fetchOne(sql: sql)!
            let named = try db.fetchOne(Named.self, sql: sql)!
            #expect(named.lower == (try row.decode(Int.self, at: "a")))
            #expect(named.upper == (try row.decode(Int.self, at: "A")))
            #expect(named.accented == 4)
            #expect(named.underscored == nil)
            let dictionary = try db.fetchOne([String: Int].self, sql: "SELECT count(*), 7 AS \"x y\", 8 AS \"\"")
            #expect(dictionary == ["count(*)": 0 + 1, "x y": 7, "": 8])
        }
    }

    /// Text and blobs at their edges.
    @Test func textAndBlobEdges() async throws {
        struct Texts: Decodable { var t: String; var d: Data; var e: Data; var z: Data; var n: Data? }
        try await inMemory { db in
            let texts = try db.fetchOne(
                Texts.self,
                sql: "SELECT CAST(x'610062' AS TEXT) AS t, x'' AS d, '' AS e, zeroblob(2) AS z, NULL AS n")!
            #expect(texts.t == "a\u{0}b")
            #expect(texts.d == Data())
            #expect(texts.e == Data())
            #expect(texts.z == Data([0, 0]))
            #expect(texts.n == nil)
        }
    }

    /// Decimals at their edges: a wrong value never comes back silently.
    @Test func decimalEdges() async throws {
        try await inMemory { db in
            for (sql, expected) in [
                ("SELECT '1e200'", Decimal?.none), ("SELECT 1e300", nil), ("SELECT '+5'", Decimal(5)),
                ("SELECT '1.'", Decimal(1)), ("SELECT '.5'", Decimal(string: "0.5")),
                ("SELECT -9223372036854775808", Decimal(Int64.min)), ("SELECT -0.0", Decimal(0)),
                ("SELECT 1e20", Decimal(string: "100000000000000000000")),
                (
                    "SELECT '12345678901234567890123456789012345678'",
                    Decimal(string: "12345678901234567890123456789012345678")
                ),
            ] {
                let value = try? db.fetchOne(Decimal.self, sql: sql)
                #expect(value == expected, "\(sql): \(String(describing: value))")
            }
        }
    }

    /// Cursors: abandoned, interleaved, failing half-way, nested.
    @Test func cursorsAbandonedInterleavedAndNested() async throws {
        struct Nested: FetchableRecord {
            var id: Int
            var total: Int
            static let sql = "SELECT id FROM t ORDER BY id"
            init(row: RowView) throws {
                id = try row.decode(Int.self, at: 0)
                total = 0
            }
        }
        try await inMemory { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3)")
            do {
                let cursor = try db.fetchCursor(Int.self, sql: "SELECT id FROM t ORDER BY id")
                #expect(try cursor.next() == 1)
            }
            #expect(try db.fetchAll(Int.self, sql: "SELECT id FROM t ORDER BY id") == [1, 2, 3])
            let first = try db.fetchCursor(Box<Int>.self, sql: "SELECT id AS v FROM t ORDER BY id")
            let second = try db.fetchCursor(Box<Int>.self, sql: "SELECT id AS v FROM t ORDER BY id")
            var pairs: [Int] = []
            while let a = try first.next(), let b = try second.next() { pairs += [a.v, b.v] }
            #expect(pairs == [1, 1, 2, 2, 3, 3])
            let failing = try db.fetchCursor(
                Box<Int8>.self, sql: "SELECT CASE id WHEN 2 THEN 1000 ELSE id END AS v FROM t")
            #expect(try failing.next()?.v == 1)
            #expect(throws: DecodingError.self) { try failing.next() }
            #expect(try failing.next() == nil)
            #expect(
                try db.fetchAll(
                    Box<Int8>.self, sql: "SELECT CASE id WHEN 2 THEN 1000 ELSE id END AS v FROM t WHERE id <> 2"
                )
                .map(\.v) == [1, 3])
        }
    }

    /// Synthesized `Codable` shapes: raw-value enums, enums with associated
    /// values (JSON), property wrappers, double optionals, subclasses.
    @Test func synthesizedShapes() async throws {
        enum Color: String, Codable { case red, blue }
        enum Level: Int, Codable { case low = 1, high = 2 }
        enum Shape: Codable, Equatable { case circle(radius: Double), square(Int) }
        @propertyWrapper struct Trimmed: Decodable {
            var wrappedValue: String
            init(from decoder: any Decoder) throws {
                wrappedValue = try decoder.singleValueContainer().decode(String.self)
                    .trimmingCharacters(in: .whitespaces)
            }
        }
        struct Item: Decodable {
            var color: Color
            var level: Level?
            var shape: Shape
            @Trimmed var name: String
            var maybe: Int??
        }
        class Base: Decodable { var id: Int }
        final class Sub: Base {
            var name: String
            enum CodingKeys: String, CodingKey { case name }
            required init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                name = try container.decode(String.self, forKey: .name)
                try super.init(from: container.superDecoder())
            }
        }
        try await inMemory { db in
            let shape = try DatabaseValue.json(Shape.circle(radius: 2))
            let item = try db.fetchOne(
                Item.self, sql: "SELECT 'blue' AS color, 2.0 AS level, ? AS shape, '  n ' AS name, NULL AS maybe",
                arguments: [shape])!
            #expect(item.color == .blue)
            #expect(item.level == .high)
            #expect(item.shape == .circle(radius: 2))
            #expect(item.name == "n")
            #expect(item.maybe == .none)
            let sub = try db.fetchOne(Sub.self, sql: "SELECT 5 AS id, 'x' AS name")!
            #expect(sub.id == 5 && sub.name == "x")
            #expect(try db.fetchAll(Color.self, sql: "SELECT 'red'") == [.red])
            do {
                _ = try db.fetchOne(
                    Item.self, sql: "SELECT 'green' AS color, ? AS shape, '' AS name", arguments: [shape])
                Issue.record("no error")
            } catch DecodingError.dataCorrupted(let context) {
                #expect(context.codingPath.map(\.stringValue) == ["color"])
            }
        }
    }
}

@Suite("Decoding: prepared cursors, JSON and wrappers, mixed containers, floats")
struct DecodingEdgeCaseTests {
    struct Pair: Decodable, Equatable { var a: Int; var b: String }

    func inMemory<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let queue = try DatabaseQueue()
        return try await withTimeout { try await queue.write(body) }
    }

    /// A cursor created before a schema change on its own connection and
    /// stepped after it reads the new columns by name.
    @Test func aCursorCreatedBeforeASchemaChangeReadsTheNewColumns() async throws {
        try await inMemory { (db: Database) throws in
            try db.execute(sql: "CREATE TABLE t (a, b); INSERT INTO t VALUES (1, 'x')")
            let decoded = try db.fetchCursor(Pair.self, sql: "SELECT * FROM t")
            let rows = try db.fetchCursor(sql: "SELECT * FROM t")
            let single = try db.fetchCursor(Int.self, sql: "SELECT * FROM t")
            try db.execute(sql: "DROP TABLE t; CREATE TABLE t (c, b, a); INSERT INTO t VALUES (0, 'y', 2)")
            let (pair, row, value) = (try decoded.next(), try rows.next(), try single.next())
            #expect(pair == Pair(a: 2, b: "y"))
            #expect(row == Row(["c": 0, "b": "y", "a": 2]))
            #expect(value == 0)
        }
    }

    /// Errors name the property, then the path inside its JSON.
    @Test func errorPaths() async throws {
        @propertyWrapper struct W: Decodable {
            var wrappedValue: Int
            init(from decoder: any Decoder) throws {
                wrappedValue = try decoder.singleValueContainer().decode(Int.self)
            }
        }
        struct S: Decodable { @W var x: Int }
        struct J: Decodable { var tags: [Int] }
        try await inMemory { (db: Database) throws in
            do {
                _ = try db.fetchOne(S.self, sql: "SELECT 'a' AS x")
                Issue.record("no error")
            } catch DecodingError.typeMismatch(_, let context) {
                #expect(context.codingPath.map(\.stringValue) == ["x"])
            }
            do {
                _ = try db.fetchOne(J.self, sql: "SELECT '[1, \"a\"]' AS tags")
                Issue.record("no error")
            } catch DecodingError.typeMismatch(_, let context) {
                #expect(context.codingPath.map(\.stringValue) == ["tags", "Index 1"])
            }
            do {
                _ = try db.fetchOne(J.self, sql: "SELECT 5 AS tags")
                Issue.record("no error")
            } catch DecodingError.typeMismatch(_, let context) {
                #expect(context.codingPath.map(\.stringValue) == ["tags"])
                #expect(context.debugDescription.contains("INTEGER"))
            }
        }
    }

    /// A type that tries a keyed container, then a single value: a
    /// column read as a number or as JSON.
    @Test func flexibleTypes() async throws {
        struct Flexible: Decodable, Equatable {
            var value: Int
            enum CodingKeys: CodingKey { case value }
            init(value: Int) { self.value = value }
            init(from decoder: any Decoder) throws {
                if let container = try? decoder.container(keyedBy: CodingKeys.self) {
                    value = try container.decode(Int.self, forKey: .value)
                } else {
                    value = try decoder.singleValueContainer().decode(Int.self)
                }
            }
        }
        struct Holder: Decodable, Equatable { var f: Flexible }
        try await inMemory { (db: Database) throws in
            let three = try db.fetchOne(Holder.self, sql: "SELECT 3 AS f")
            let four = try db.fetchOne(Holder.self, sql: "SELECT '{\"value\": 4}' AS f")
            #expect(three?.f == Flexible(value: 3))
            #expect(four?.f == Flexible(value: 4))
            #expect(throws: DecodingError.self) { try db.fetchOne(Holder.self, sql: "SELECT 'abc' AS f") }
        }
    }

    /// Float narrowing and the sign of zero.
    @Test func floatsAndReals() async throws {
        struct F: Decodable { var f: Float; var d: Double }
        try await inMemory { (db: Database) throws in
            let f = try db.fetchOne(F.self, sql: "SELECT 9223372036854775807 AS f, -0.0 AS d")!
            #expect(f.f == Float(Int64.max))
            #expect(f.d.sign == .minus)
            #expect(try db.fetchOne(Double.self, sql: "SELECT -0.0")?.sign == .minus)
            #expect(throws: DecodingError.self) { try db.fetchOne(F.self, sql: "SELECT 1e300 AS f, 1 AS d") }
            #expect(try db.fetchOne(F.self, sql: "SELECT 1e999 AS f, -1e999 AS d")?.f == .infinity)
            #expect(throws: DecodingError.self) { try db.fetchOne(Float.self, sql: "SELECT 1e300") }
        }
    }
}
