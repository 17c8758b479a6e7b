import DBWatchTestSupport
import Testing

@testable import DBWatchPostgres

/// Messages of `pgoutput` protocol version 1 as PostgreSQL 15 sent them
/// (`pg_logical_slot_peek_binary_changes(..., 'proto_version', '1',
/// 'publication_names', 'p', 'messages', 'true')`), in hex, for:
///
/// ```sql
/// create table t(id int primary key, name text, tags int[], at timestamptz, price numeric);
/// create table f(a int, b text); alter table f replica identity full;
/// create table big(id int primary key, body text);
/// create type mood as enum ('sad','happy'); create table e(id int primary key, m mood);
/// insert into t values (1,'a','{1,2}','2026-11-24 23:41:24.615767+00',1.50);
/// insert into t values (2,NULL,'{}',NULL,'NaN');
/// update t set name='b' where id=1; update t set id=3 where id=2; delete from t where id=3;
/// insert into f values (1,'x'); update f set b='y'; delete from f;
/// insert into big values (1, repeat('abcdefghij', 100000)); update big set id=2;
/// truncate t, f restart identity cascade;
/// insert into e values (1,'happy');
/// select pg_logical_emit_message(true, 'pfx', 'hello');
/// ```
enum PgOutputFixtures {
    static let begin = "42000000000153b0680003040d18890eb8000002db"
    static let commit = "4300000000000153b068000000000153b0980003040d18890eb8"
    static let relationT =
        "52000040007075626c69630074006400050169640000000017ffffffff006e616d650000000019ffffffff"
        + "007461677300000003efffffffff00617400000004a0ffffffff00707269636500000006a4ffffffff"
    static let insertT =
        "49000040004e000574000000013174000000016174000000057b312c327d740000001d323032362d31312d32342032333a34313a"
        + "32342e3631353736372b30307400000004312e3530"
    static let insertWithNulls = "49000040004e00057400000001326e74000000027b7d6e74000000034e614e"
    static let updateSameKey =
        "55000040004e000574000000013174000000016274000000057b312c327d740000001d323032362d31312d32342032333a34313a"
        + "32342e3631353736372b30307400000004312e3530"
    static let updateNewKey = "55000040004b00057400000001326e6e6e6e4e00057400000001336e74000000027b7d6e74000000034e614e"
    static let deleteByKey = "44000040004b00057400000001336e6e6e6e"
    static let relationFull = "52000040077075626c696300660066000201610000000017ffffffff01620000000019ffffffff"
    static let updateFull = "55000040074f00027400000001317400000001784e0002740000000131740000000179"
    static let deleteFull = "44000040074f0002740000000131740000000179"
    static let updateUnchangedToast = "550000400c4b00027400000001316e4e000274000000013275"
    static let truncate = "5400000002030000400000004007"
    static let type = "59000040147075626c6963006d6f6f6400"
    static let relationWithEnum =
        "52000040197075626c69630065006400020169640000000017ffffffff006d0000004014ffffffff"
    static let logicalMessage = "4d01000000000153fe90706678000000000568656c6c6f"

    /// Every fixture that the replica reads (not the ignored ones).
    static let read = [
        begin, commit, relationT, insertT, insertWithNulls, updateSameKey, updateNewKey, deleteByKey, relationFull,
        updateFull, deleteFull, updateUnchangedToast, truncate, relationWithEnum,
    ]

    /// The bytes of a hex string.
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
    }
}

@Suite("pgoutput messages")
struct PgOutputParsingTests {
    typealias Message = PgOutputMessage

    private func parse(_ hex: String) throws -> Message {
        try Message(parsing: PgOutputFixtures.bytes(hex))
    }

    private func text(_ string: String) -> Message.TupleValue {
        .text(Array(string.utf8))
    }

    @Test("Begin and commit give positions, time and transaction id")
    func beginAndCommit() throws {
        #expect(
            try parse(PgOutputFixtures.begin)
                == .begin(
                    .init(
                        finalPosition: LogSequenceNumber(rawValue: 0x153_B068), commitTime: 0x0003_040D_1889_0EB8,
                        transactionID: 0x2DB)))
        #expect(
            try parse(PgOutputFixtures.commit)
                == .commit(
                    .init(
                        commitPosition: LogSequenceNumber(rawValue: 0x153_B068),
                        endPosition: LogSequenceNumber(rawValue: 0x153_B098), commitTime: 0x0003_040D_1889_0EB8)))
    }

    @Test("A relation gives its schema, name, identity and columns")
    func relation() throws {
        let expected = Message.Relation(
            id: 0x4000, namespace: "public", name: "t", replicaIdentity: UInt8(ascii: "d"),
            columns: [
                .init(isKey: true, name: "id", typeOID: 23, typeModifier: -1),
                .init(isKey: false, name: "name", typeOID: 25, typeModifier: -1),
                .init(isKey: false, name: "tags", typeOID: 1007, typeModifier: -1),
                .init(isKey: false, name: "at", typeOID: 1184, typeModifier: -1),
                .init(isKey: false, name: "price", typeOID: 1700, typeModifier: -1),
            ])
        #expect(try parse(PgOutputFixtures.relationT) == .relation(expected))
        guard case .relation(let full) = try parse(PgOutputFixtures.relationFull) else {
            Issue.record("not a relation")
            return
        }
        #expect(full.replicaIdentity == UInt8(ascii: "f"))
        #expect(full.columns.map(\.isKey) == [true, true])
        guard case .relation(let withEnum) = try parse(PgOutputFixtures.relationWithEnum) else {
            Issue.record("not a relation")
            return
        }
        #expect(withEnum.columns.map(\.typeOID) == [23, 0x4014])
    }

    @Test("An empty namespace is pg_catalog")
    func emptyNamespaceIsCatalog() throws {
        let bytes: [UInt8] = [UInt8(ascii: "R"), 0, 0, 0, 1, 0, UInt8(ascii: "x"), 0, UInt8(ascii: "n"), 0, 0]
        guard case .relation(let relation) = try Message(parsing: bytes) else {
            Issue.record("not a relation")
            return
        }
        #expect(relation.namespace == "pg_catalog")
        #expect(relation.name == "x")
        #expect(relation.columns.isEmpty)
    }

    @Test("An insert gives the new row, NULLs included")
    func insert() throws {
        #expect(
            try parse(PgOutputFixtures.insertT)
                == .insert(
                    relation: 0x4000,
                    newRow: .init(values: [
                        text("1"), text("a"), text("{1,2}"), text("2026-11-24 23:41:24.615767+00"), text("1.50"),
                    ])))
        #expect(
            try parse(PgOutputFixtures.insertWithNulls)
                == .insert(
                    relation: 0x4000, newRow: .init(values: [text("2"), .null, text("{}"), .null, text("NaN")])))
    }

    @Test("An update gives the old key only when the key changed, or the old row with identity full")
    func update() throws {
        guard case .update(0x4000, nil, let newRow) = try parse(PgOutputFixtures.updateSameKey) else {
            Issue.record("not an update without old key")
            return
        }
        #expect(newRow.values[1] == text("b"))
        #expect(
            try parse(PgOutputFixtures.updateNewKey)
                == .update(
                    relation: 0x4000, oldKey: .init(values: [text("2"), .null, .null, .null, .null]),
                    newRow: .init(values: [text("3"), .null, text("{}"), .null, text("NaN")])))
        #expect(
            try parse(PgOutputFixtures.updateFull)
                == .update(
                    relation: 0x4007, oldKey: .init(values: [text("1"), text("x")]),
                    newRow: .init(values: [text("1"), text("y")])))
    }

    @Test("An update of a row whose TOASTed value did not change says so")
    func unchangedToast() throws {
        #expect(
            try parse(PgOutputFixtures.updateUnchangedToast)
                == .update(
                    relation: 0x400C, oldKey: .init(values: [text("1"), .null]),
                    newRow: .init(values: [text("2"), .unchangedToast])))
    }

    @Test("A delete gives the key, or the whole row with identity full")
    func delete() throws {
        #expect(
            try parse(PgOutputFixtures.deleteByKey)
                == .delete(relation: 0x4000, oldKey: .init(values: [text("3"), .null, .null, .null, .null])))
        #expect(
            try parse(PgOutputFixtures.deleteFull)
                == .delete(relation: 0x4007, oldKey: .init(values: [text("1"), text("y")])))
    }

    @Test("A truncate gives its tables and options")
    func truncate() throws {
        #expect(
            try parse(PgOutputFixtures.truncate)
                == .truncate(relations: [0x4000, 0x4007], cascade: true, restartIdentity: true))
        #expect(
            try Message(parsing: [UInt8(ascii: "T"), 0, 0, 0, 1, 0, 0, 0, 0, 9])
                == .truncate(relations: [9], cascade: false, restartIdentity: false))
    }

    @Test("Type, origin and logical messages are ignored")
    func ignored() throws {
        #expect(try parse(PgOutputFixtures.type) == .ignored(tag: UInt8(ascii: "Y")))
        #expect(try parse(PgOutputFixtures.logicalMessage) == .ignored(tag: UInt8(ascii: "M")))
        let origin: [UInt8] = [UInt8(ascii: "O"), 0, 0, 0, 0, 0, 0, 0, 1] + Array("origin".utf8) + [0]
        #expect(try Message(parsing: origin) == .ignored(tag: UInt8(ascii: "O")))
    }

    @Test("Every truncated message throws", arguments: PgOutputFixtures.read)
    func everyPrefixThrows(hex: String) {
        let bytes = PgOutputFixtures.bytes(hex)
        for length in 0..<bytes.count {
            #expect(throws: PgOutputParseError.self, "prefix of \(length) bytes") {
                try Message(parsing: Array(bytes[..<length]))
            }
        }
    }

    @Test("A byte after the end of a message throws", arguments: PgOutputFixtures.read)
    func trailingByteThrows(hex: String) {
        let bytes = PgOutputFixtures.bytes(hex)
        #expect(throws: PgOutputParseError(message: "1 bytes after the end of the message", offset: bytes.count)) {
            try Message(parsing: bytes + [0])
        }
    }

    @Test("Bad messages throw with the offset of the faulty field")
    func badMessagesThrowAtTheirOffset() {
        func offset(_ bytes: [UInt8]) -> Int? {
            do {
                _ = try Message(parsing: bytes)
                return nil
            } catch {
                return error.offset
            }
        }
        let insertHeader: [UInt8] = [UInt8(ascii: "I"), 0, 0, 0, 1, UInt8(ascii: "N"), 0, 1]
        // An unknown tag, and protocol 2's stream start.
        #expect(offset([UInt8(ascii: "Z")]) == 0)
        #expect(offset([UInt8(ascii: "S"), 0, 0, 0, 1, 1]) == 0)
        #expect(offset([]) == 0)
        // A value in binary, which the replica does not request.
        #expect(offset(insertHeader + [UInt8(ascii: "b"), 0, 0, 0, 1, 7]) == 8)
        // An unknown value kind, a negative length, a length past the end.
        #expect(offset(insertHeader + [UInt8(ascii: "x")]) == 8)
        #expect(offset(insertHeader + [UInt8(ascii: "t"), 0xFF, 0xFF, 0xFF, 0xFF]) == 9)
        #expect(offset(insertHeader + [UInt8(ascii: "t"), 0x7F, 0xFF, 0xFF, 0xFF, 1]) == 13)
        // No N marker in an insert, an unknown marker in an update or delete.
        #expect(offset([UInt8(ascii: "I"), 0, 0, 0, 1, UInt8(ascii: "K"), 0, 0]) == 5)
        #expect(offset([UInt8(ascii: "U"), 0, 0, 0, 1, UInt8(ascii: "X"), 0, 0]) == 5)
        #expect(offset([UInt8(ascii: "U"), 0, 0, 0, 1, UInt8(ascii: "K"), 0, 0, UInt8(ascii: "K"), 0, 0]) == 8)
        #expect(offset([UInt8(ascii: "D"), 0, 0, 0, 1, UInt8(ascii: "N"), 0, 0]) == 5)
        // Negative counts.
        #expect(offset([UInt8(ascii: "I"), 0, 0, 0, 1, UInt8(ascii: "N"), 0xFF, 0xFF]) == 6)
        #expect(offset([UInt8(ascii: "T"), 0xFF, 0xFF, 0xFF, 0xFF, 0]) == 1)
        #expect(offset([UInt8(ascii: "R"), 0, 0, 0, 1, 0, UInt8(ascii: "x"), 0, UInt8(ascii: "n"), 0x80, 0]) == 9)
        // A huge count with nothing after it: an error, not an allocation.
        #expect(offset([UInt8(ascii: "T"), 0x7F, 0xFF, 0xFF, 0xFF, 0]) == 6)
        #expect(offset([UInt8(ascii: "I"), 0, 0, 0, 1, UInt8(ascii: "N"), 0x7F, 0xFF]) == 8)
        // A name that is not UTF-8, a name without its NUL.
        #expect(offset([UInt8(ascii: "R"), 0, 0, 0, 1, 0xFF, 0, UInt8(ascii: "x"), 0, UInt8(ascii: "n"), 0, 0]) == 5)
        #expect(offset([UInt8(ascii: "R"), 0, 0, 0, 1, UInt8(ascii: "p")]) == 5)
    }

    @Test("Random bytes and random corruptions of real messages never crash")
    func garbageNeverCrashes() {
        var generator = SeededGenerator(seed: 19)
        let fixtures = (PgOutputFixtures.read + [PgOutputFixtures.type, PgOutputFixtures.logicalMessage])
            .map(PgOutputFixtures.bytes)
        let tags = Array("BCRIUDTYOMSEZbtn".utf8)
        var parsed = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                let count = Int.random(in: 0..<64, using: &generator)
                bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if !bytes.isEmpty { bytes[0] = tags.randomElement(using: &generator)! }
            } else {
                bytes = fixtures.randomElement(using: &generator)!
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                        in: 0...255, using: &generator)
                }
            }
            if (try? Message(parsing: bytes)) != nil { parsed += 1 }
        }
        // Some corruptions still read (a changed value byte); most do not.
        #expect(parsed > 0 && parsed < 20_000)
    }
}
