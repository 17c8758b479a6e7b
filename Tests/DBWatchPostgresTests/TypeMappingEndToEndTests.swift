import DBWatch
import DBWatchPostgres
import DBWatchTestSupport
import Foundation
import PostgresNIO
import Testing

@Suite("Replica: types, copied and streamed", RequiredProgram.postgresql.trait)
struct TypeMappingEndToEndTests {
    static let schema = """
        CREATE TYPE mood AS ENUM ('sad', 'happy');
        CREATE DOMAIN positive AS int CHECK (VALUE > 0);
        CREATE TABLE sample (
            id int PRIMARY KEY, small smallint, big bigint, ratio float8, price numeric(10, 2), label text,
            code varchar(8), flag bool, raw bytea, at timestamptz, local timestamp, day date, doc jsonb,
            ident uuid, tags text[], grid int[], feeling mood, count positive)
        """
    static let values = """
        2, -32768, 9223372036854775807, 0.1, 12345678.90, 'é 🌍 "q"', 'abc', true, '\\x00ff10',
        '2026-11-24 23:41:24.615767+05:30', '1999-12-31 23:59:59.9996', '2026-02-28', '{"a": [1, 2.5, null]}',
        'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '{"a b", "c\\"d", NULL}', '{{1,2},{3,4}}', 'happy', 7
        """

    @Test("Every mapped type gives the same SQLite values whether the row was copied or streamed")
    func copiedAndStreamedValuesAgree() async throws {
        try await withReplicaScene(schema: Self.schema + "; INSERT INTO sample VALUES (1, \(Self.values.dropFirst(2)))")
        { scene in
            let replica = scene.replica(tables: ["sample"])
            try await withRunningReplica(replica) { _ in
                try await replica.catchUp(with: scene.client)
                try await scene.server.run("INSERT INTO sample VALUES (\(Self.values))")
                try await replica.catchUp(with: scene.client)
                let rows = try await scene.pool.read { db in try db.fetchAll(sql: "SELECT * FROM sample ORDER BY id") }
                try #require(rows.count == 2)
                let copied = Array(rows[0].values.dropFirst())
                let streamed = Array(rows[1].values.dropFirst())
                #expect(copied == streamed)
                let row = rows[1]
                #expect(row["small"] == .integer(-32768))
                #expect(row["big"] == .integer(Int64.max))
                #expect(row["ratio"] == .real(0.1))
                #expect(row["price"] == .text("12345678.90"))
                #expect(row["label"] == .text("é 🌍 \"q\""))
                #expect(row["flag"] == .integer(1))
                #expect(row["raw"] == .blob(Data([0, 255, 16])))
                #expect(row["at"] == .text("2026-11-24 18:11:24.616"))
                #expect(row["local"] == .text("2000-01-01 00:00:00.000"))
                #expect(row["day"] == .text("2026-02-28"))
                #expect(row["ident"] == .text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))
                #expect(row["tags"] == .text(#"["a b","c\"d",null]"#))
                #expect(row["grid"] == .text("[[1,2],[3,4]]"))
                #expect(row["feeling"] == .text("happy"))
                #expect(row["count"] == .integer(7))
                let at = try row.decode(Date.self, at: "at")
                #expect(abs(at.timeIntervalSince1970 - 1_795_543_884.616) < 0.001)
                let doc = try #require(row["doc"])
                guard case .text(let json) = doc else { throw TypeMismatch(value: doc) }
                let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: [Any]]
                #expect(parsed?["a"]?.count == 3)
            }
        }
    }

    @Test("A value the mapping cannot store stops the replica with unsupportedValue")
    func anUnstorableValueStops() async throws {
        try await withReplicaScene(schema: "CREATE TABLE m (id int PRIMARY KEY, x float8)") { scene in
            let replica = scene.replica(tables: ["m"])
            let error = try await withRunningReplica(replica) { running in
                try await replica.catchUp(with: scene.client)
                try await scene.server.run("INSERT INTO m VALUES (1, 1.5)", "INSERT INTO m VALUES (2, 'NaN')")
                return try await running.failure()
            }
            #expect(error?.code == .unsupportedValue)
            #expect(error?.column == "x")
            #expect(try await scene.replicaRows("m", columns: ["id", "x"]) == "1|1.5")
        }
    }

    @Test("A value the mapping cannot store in the initial copy stops the replica and drops its slot")
    func anUnstorableCopiedValueStops() async throws {
        try await withReplicaScene(
            schema: "CREATE TABLE m (id int PRIMARY KEY, x float8); INSERT INTO m VALUES (1, 1.5), (2, 'NaN')"
        ) { scene in
            let error = try await withRunningReplica(scene.replica(tables: ["m"])) { try await $0.failure() }
            #expect(error?.code == .unsupportedValue)
            #expect(try await scene.slotNames().isEmpty)
        }
    }

    struct TypeMismatch: Error { var value: DatabaseValue }
}
