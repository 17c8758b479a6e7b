import DBWatch
import DBWatchPostgres
import DBWatchTestSupport
import Foundation
import Testing

@Suite("Replica: the initial copy and the change feed give the same values", RequiredProgram.postgresql.trait)
struct CopyFeedAgreementTests {
    @Test("A char(n) value keeps its padding in the initial copy, as in the change feed")
    func copiedCharKeepsItsPadding() async throws {
        try await withReplicaScene(
            schema: "CREATE TABLE t (id int PRIMARY KEY, c char(5)); INSERT INTO t VALUES (1, 'ab')"
        ) { scene in
            let replica = scene.replica(tables: ["t"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                try await scene.server.run("INSERT INTO t VALUES (2, 'ab')")
                try await replica.catchUp(with: scene.client)
                let values = try await scene.pool.read { db in
                    try db.fetchAll(String.self, sql: "SELECT c FROM t ORDER BY id")
                }
                #expect(values == ["ab   ", "ab   "])
            }
        }
    }

    /// Every mapped type, scalars and arrays, with an enum and a domain.
    static let schema = """
        CREATE TYPE mood AS ENUM ('sad', 'happy', 'so-so');
        CREATE DOMAIN positive AS int CHECK (VALUE > 0);
        CREATE TABLE sample (
            id int PRIMARY KEY, small int2, medium int4, big int8, object oid, single float4, double float8,
            exact numeric, label text, short varchar(10), padded char(6), letter "char", tag name, flag bool,
            raw bytea, at timestamptz, local timestamp, day date, clock time, doc json, docb jsonb, ident uuid,
            feeling mood, count positive, labels text[], paddeds char(3)[], grid int4[], flags bool[],
            exacts numeric[], doubles float8[], moments timestamptz[], docs jsonb[]);
        """

    @Test("Random rows of every mapped type give identical SQLite rows copied and streamed")
    func randomRowsAgree() async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var generator = SeededGenerator(seed: seed)
        let count = 60
        let rows = (1...count).map { RandomRow.literal(id: $0, using: &generator) }
        try await withReplicaScene(
            schema: Self.schema + "INSERT INTO sample VALUES " + rows.joined(separator: ",\n")
        ) { scene in
            let replica = scene.replica(tables: ["sample"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                // The same values again, streamed this time.
                try await scene.server.run(
                    "INSERT INTO sample SELECT id + 1000, \(RandomRow.columns.dropFirst().joined(separator: ", ")) "
                        + "FROM sample")
                try await replica.catchUp(with: scene.client)
                let stored = try await scene.pool.read { db in
                    try db.fetchAll(sql: "SELECT * FROM sample ORDER BY id")
                }
                try #require(stored.count == 2 * count)
                for index in 0..<count {
                    let copied = Array(stored[index].values.dropFirst())
                    let streamed = Array(stored[count + index].values.dropFirst())
                    #expect(copied == streamed, "seed \(seed), row \(index + 1): \(rows[index])")
                }
            }
        }
    }
}

/// A random row of `CopyFeedAgreementTests.schema`, as SQL.
enum RandomRow {
    static let columns = [
        "id", "small", "medium", "big", "object", "single", "double", "exact", "label", "short", "padded", "letter",
        "tag", "flag", "raw", "at", "local", "day", "clock", "doc", "docb", "ident", "feeling", "count", "labels",
        "paddeds", "grid", "flags", "exacts", "doubles", "moments", "docs",
    ]

    /// `(id, …)` with random values, some of them NULL.
    static func literal(id: Int, using generator: inout SeededGenerator) -> String {
        func maybeNull(_ value: String) -> String { Int.random(in: 0..<8, using: &generator) == 0 ? "NULL" : value }
        var values = ["\(id)"]
        values.append(maybeNull("\(Int16.random(in: .min ... .max, using: &generator))::int2"))
        values.append(maybeNull("\(Int32.random(in: .min ... .max, using: &generator))"))
        values.append(maybeNull("\(Int64.random(in: .min ... .max, using: &generator))"))
        values.append(maybeNull("\(UInt32.random(in: 0 ... .max, using: &generator))::oid"))
        values.append(maybeNull("'\(float(using: &generator))'::float4"))
        values.append(maybeNull("'\(double(using: &generator))'::float8"))
        values.append(maybeNull("'\(decimal(using: &generator))'::numeric"))
        values.append(maybeNull(quote(text(0...20, using: &generator))))
        values.append(maybeNull(quote(text(0...10, using: &generator))))
        values.append(maybeNull(quote(text(0...6, using: &generator))))
        values.append(maybeNull(quote(String("ab Z9{,\"".randomElement(using: &generator)!)) + "::\"char\""))
        values.append(maybeNull(quote(text(0...12, using: &generator)) + "::name"))
        values.append(maybeNull(Bool.random(using: &generator) ? "true" : "false"))
        let bytes = (0..<Int.random(in: 0...12, using: &generator)).map { _ in
            String(format: "%02x", UInt8.random(in: 0 ... .max, using: &generator))
        }
        values.append(maybeNull("'\\x\(bytes.joined())'::bytea"))
        values.append(maybeNull("'epoch'::timestamptz + \(moment(using: &generator))"))
        values.append(maybeNull("'epoch'::timestamp + \(moment(using: &generator))"))
        values.append(maybeNull("'epoch'::date + \(Int.random(in: -300_000...300_000, using: &generator))"))
        values.append(
            maybeNull("'00:00'::time + '\(Int64.random(in: 0..<86_400_000_000, using: &generator)) microseconds'"))
        values.append(maybeNull(quote(json(using: &generator)) + "::json"))
        values.append(maybeNull(quote(json(using: &generator)) + "::jsonb"))
        values.append(maybeNull(quote(UUID().uuidString) + "::uuid"))
        values.append(maybeNull(quote(["sad", "happy", "so-so"].randomElement(using: &generator)!) + "::mood"))
        values.append(maybeNull("\(Int.random(in: 1...1_000_000, using: &generator))"))
        values.append(maybeNull(array("text", using: &generator) { quote(text(0...8, using: &$0)) }))
        values.append(maybeNull(array("char(3)", using: &generator) { quote(text(0...3, using: &$0)) }))
        let side = Int.random(in: 1...3, using: &generator)
        let grid = (0..<side).map { _ in
            "ARRAY[" + (0..<2).map { _ in "\(Int32.random(in: -99...99, using: &generator))" }.joined(separator: ",")
                + "]"
        }
        values.append(maybeNull("ARRAY[\(grid.joined(separator: ","))]::int4[]"))
        values.append(maybeNull(array("bool", using: &generator) { Bool.random(using: &$0) ? "true" : "false" }))
        values.append(maybeNull(array("numeric", using: &generator) { "'\(decimal(using: &$0))'::numeric" }))
        values.append(maybeNull(array("float8", using: &generator) { "'\(double(using: &$0))'::float8" }))
        values.append(
            maybeNull(array("timestamptz", using: &generator) { "'epoch'::timestamptz + \(moment(using: &$0))" }))
        values.append(maybeNull(array("jsonb", using: &generator) { quote(json(using: &$0)) + "::jsonb" }))
        return "(" + values.joined(separator: ", ") + ")"
    }

    /// Letters that make text interesting: spaces (leading and trailing),
    /// quotes, backslashes, braces and commas (array syntax), non-ASCII.
    static let letters = Array("ab Z9 '\"\\{},\t\né🌍ß ")

    static func text(_ lengths: ClosedRange<Int>, using generator: inout SeededGenerator) -> String {
        String((0..<Int.random(in: lengths, using: &generator)).map { _ in letters.randomElement(using: &generator)! })
    }

    /// A SQL string literal (standard_conforming_strings is on).
    static func quote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    static func float(using generator: inout SeededGenerator) -> Float {
        while true {
            let value = Float(bitPattern: UInt32.random(in: 0 ... .max, using: &generator))
            if value.isNormal || value == 0 { return value }
        }
    }

    static func double(using generator: inout SeededGenerator) -> Double {
        while true {
            let value = Double(bitPattern: UInt64.random(in: 0 ... .max, using: &generator))
            if value.isNormal || value == 0 { return value }
        }
    }

    static func decimal(using generator: inout SeededGenerator) -> String {
        let whole = String(
            UInt64.random(in: 0 ... .max, using: &generator) >> Int.random(in: 0...63, using: &generator))
        let fraction = (0..<Int.random(in: 0...12, using: &generator)).map { _ in
            String(Int.random(in: 0...9, using: &generator))
        }
        return (Bool.random(using: &generator) ? "-" : "") + whole
            + (fraction.isEmpty ? "" : "." + fraction.joined())
    }

    /// An interval of whole microseconds, within about 300 years of 1970.
    static func moment(using generator: inout SeededGenerator) -> String {
        "'\(Int64.random(in: -9_000_000_000_000_000...9_000_000_000_000_000, using: &generator)) microseconds'::interval"
    }

    static func json(using generator: inout SeededGenerator) -> String {
        switch Int.random(in: 0..<5, using: &generator) {
        case 0: return "null"
        case 1: return "\(Double(Int.random(in: -9999...9999, using: &generator)) / 100)"
        case 2:
            let key = text(0...4, using: &generator).replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
                .replacingOccurrences(of: "\t", with: "\\t")
            return "{ \"\(key)\" :  [1, true,  \"x\"] }"
        case 3: return "[ ]"
        default: return "\"\(Int.random(in: 0...99, using: &generator))\""
        }
    }

    /// `ARRAY[…]::type[]` of up to four elements, some NULL.
    static func array(
        _ type: String, using generator: inout SeededGenerator, element: (inout SeededGenerator) -> String
    ) -> String {
        let elements = (0..<Int.random(in: 0...4, using: &generator)).map { _ in
            Int.random(in: 0..<6, using: &generator) == 0 ? "NULL" : element(&generator)
        }
        return "ARRAY[\(elements.joined(separator: ", "))]::\(type)[]"
    }
}
