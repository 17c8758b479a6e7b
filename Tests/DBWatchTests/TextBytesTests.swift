@testable import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

/// Text is what SQLite stores, byte for byte: text that is not valid UTF-8,
/// embedded NUL characters and other Unicode normalization forms are kept
/// and compared as stored.
@Suite("Text stored as bytes")
struct TextBytesTests {
    /// Stored text, as hexadecimal: invalid UTF-8 of several kinds (a lone
    /// byte, a truncated 4-byte sequence that repairs to as many bytes as
    /// it has, an overlong form, an encoded surrogate), a NUL, and the two
    /// normalization forms of "é".
    static let storedTexts = ["fe", "ff", "61fe62", "f09f98", "c0af", "eda080", "610062", "00", "c3a9", "65cc81", ""]

    func open(_ kind: DatabaseKind, in directory: TemporaryDirectory) throws -> any DatabaseWriter {
        try kind.open(in: directory)
    }

    @Test func readingAndWritingBackKeepsTheBytes() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE source (id INTEGER PRIMARY KEY, v); CREATE TABLE copy (id, v)")
            for (id, hex) in Self.storedTexts.enumerated() {
                try db.execute(sql: "INSERT INTO source VALUES (?, CAST(x'\(hex)' AS TEXT))", arguments: [id])
            }
            // Each value read as a DatabaseValue (a Row), then bound again.
            for row in try db.fetchAll(sql: "SELECT id, v FROM source") {
                try db.execute(sql: "INSERT INTO copy VALUES (?, ?)", arguments: [row[0], row[1]])
            }
            // And through a record that reads the value in place.
            struct Raw: FetchableRecord {
                var id: Int64
                var value: DatabaseValue
                init(row: RowView) throws {
                    id = try row.decode(Int64.self, at: 0)
                    value = try row.decode(DatabaseValue.self, at: 1)
                }
            }
            for raw in try db.fetchAll(Raw.self, sql: "SELECT id, v FROM source") {
                try db.execute(sql: "INSERT INTO copy VALUES (?, ?)", arguments: [raw.id + 100, raw.value])
            }
            let copies = try db.fetchAll(
                sql: "SELECT hex(v), typeof(v) FROM copy ORDER BY id"
            ).map { try $0.decode(String.self, at: 0).lowercased() + " " + $0.decode(String.self, at: 1) }
            let expected = Self.storedTexts.map { $0 + " text" }
            #expect(copies == expected + expected)
        }
    }

    /// In a UTF-16 database SQLite converts text to UTF-8 for reading and
    /// back for writing: valid text read and written back is stored
    /// unchanged. An unpaired surrogate reads as the bytes SQLite makes of
    /// it (not repaired by DBWatch), but SQLite's conversion back to UTF-16
    /// stores U+FFFD for it: a documented limit.
    @Test func aUTF16DatabaseKeepsValidText() async throws {
        try await withTemporaryDirectory { directory in
            let queue = try DatabaseQueue(path: directory.file("db.sqlite"))
            defer { queue.syncClose() }
            try await queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA encoding = 'UTF-16le'")
                try db.execute(sql: "CREATE TABLE source (v); CREATE TABLE copy (v)")
                #expect(try db.fetchOne(String.self, sql: "PRAGMA encoding") == "UTF-16le")
                for hex in ["6100e900", "65000103", "3dd800de", "61000000620000"] {
                    try db.execute(sql: "INSERT INTO source VALUES (CAST(x'\(hex)' AS TEXT))")
                }
                for row in try db.fetchAll(sql: "SELECT v FROM source ORDER BY rowid") {
                    try db.execute(sql: "INSERT INTO copy VALUES (?)", arguments: [row[0]])
                }
                let source = try db.fetchAll(String.self, sql: "SELECT hex(v) FROM source ORDER BY rowid")
                #expect(try db.fetchAll(String.self, sql: "SELECT hex(v) FROM copy ORDER BY rowid") == source)
                let lone = try db.fetchOne(sql: "SELECT CAST(x'00d8' AS TEXT)")?[0]
                #expect(lone == .invalidUTF8Text(Data([0xed, 0xa0, 0x80])))
                try db.execute(sql: "DELETE FROM copy; INSERT INTO copy VALUES (?)", arguments: [lone])
                #expect(try db.fetchOne(String.self, sql: "SELECT hex(v) FROM copy") == "FDFF")
            }
        }
    }

    @Test func invalidTextIsKeptAsItsBytes() async throws {
        let queue = try DatabaseQueue()
        try await queue.read { db in
            let row = try #require(try db.fetchOne(sql: "SELECT CAST(x'61fe' AS TEXT), CAST(x'610062' AS TEXT)"))
            #expect(row[0] == .invalidUTF8Text(Data([0x61, 0xfe])))
            #expect(row[1] == .text("a\0b"))
            // A String is repaired; Data and DatabaseValue keep the bytes.
            #expect(try row.decode(String.self, at: 0) == "a\u{FFFD}")
            #expect(try row.decode(Data.self, at: 0) == Data([0x61, 0xfe]))
            #expect(try db.fetchOne(String.self, sql: "SELECT CAST(x'61fe' AS TEXT)") == "a\u{FFFD}")
            #expect(try db.fetchOne(Data.self, sql: "SELECT CAST(x'61fe' AS TEXT)") == Data([0x61, 0xfe]))
            struct Named: Decodable {
                var name: String
                var tags: [String]?
            }
            #expect(try db.fetchOne(Named.self, sql: "SELECT CAST(x'61fe' AS TEXT) AS name")?.name == "a\u{FFFD}")
            // Nothing else reads from it silently: JSON, dates, numbers throw.
            #expect(throws: DecodingError.self) {
                try db.fetchOne(Named.self, sql: "SELECT 'a' AS name, CAST(x'5bfe5d' AS TEXT) AS tags")
            }
            #expect(throws: DecodingError.self) { try db.fetchOne(Date.self, sql: "SELECT CAST(x'fe' AS TEXT)") }
            #expect(throws: DecodingError.self) { try db.fetchOne(Int.self, sql: "SELECT CAST(x'fe' AS TEXT)") }
            // A record reading in place gets the same String and bytes.
            struct Record: FetchableRecord {
                var text: String
                var named: String
                var bytes: Data
                init(row: RowView) throws {
                    text = try row.decode(String.self, at: 0)
                    named = try row.decode(String.self, at: "v")
                    bytes = try row.decode(Data.self, at: 0)
                }
            }
            let record = try #require(try db.fetchOne(Record.self, sql: "SELECT CAST(x'61fe' AS TEXT) AS v"))
            #expect(record.text == "a\u{FFFD}" && record.named == "a\u{FFFD}" && record.bytes == Data([0x61, 0xfe]))
            #expect(throws: DecodingError.self) { try db.fetchOne(Record.self, sql: "SELECT 1 AS v") }
            #expect(row[0].description == "CAST(x'61fe' AS TEXT)")
        }
        #expect(DatabaseValue(textBytes: Data("a".utf8)) == .text("a"))
        #expect(DatabaseValue(textBytes: Data()) == .text(""))
        #expect(DatabaseValue(textBytes: Data([0xf0, 0x9f, 0x98])) == .invalidUTF8Text(Data([0xf0, 0x9f, 0x98])))
    }

    @Test func valuesCompareByTheirStoredBytes() async throws {
        let queue = try DatabaseQueue()
        let rows = try await queue.read { db in
            try Self.storedTexts.map { hex in
                try #require(try db.fetchOne(sql: "SELECT 1 AS id, CAST(x'\(hex)' AS TEXT) AS v"))
            }
        }
        // Every stored text is a different row; equal rows hash equally.
        for (index, row) in rows.enumerated() {
            for (other, otherRow) in rows.enumerated() {
                #expect((row == otherRow) == (index == other), "\(row) \(otherRow)")
            }
        }
        #expect(Set(rows).count == rows.count)
        #expect(Set(rows + rows).count == rows.count)
        // "é" precomposed and decomposed: equal as Swift strings, not as stored.
        #expect("\u{e9}" == "e\u{301}")
        #expect(DatabaseValue.text("\u{e9}") != .text("e\u{301}"))
        // Text and blob with the same bytes differ, as in SQL.
        #expect(DatabaseValue.text("a") != .blob(Data("a".utf8)))
        #expect(DatabaseValue.invalidUTF8Text(Data([0xfe])) != .blob(Data([0xfe])))
        // Valid bytes in the invalid-text case (built by hand) equal the text.
        #expect(DatabaseValue.invalidUTF8Text(Data("é".utf8)) == .text("é"))
        #expect(Set<DatabaseValue>([.invalidUTF8Text(Data("é".utf8)), .text("é")]).count == 1)
    }

    @Test("an observation sees a change of stored bytes", arguments: DatabaseKind.onFile)
    func observationSeesChangedBytes(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let database = try open(kind, in: directory)
            defer { database.syncClose() }
            try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
                        INSERT INTO t VALUES (1, CAST(x'ff' AS TEXT));
                        """)
            }
            let (values, task) = record(database.observe(SQLRequest("SELECT id, v FROM t")))
            defer { task.cancel() }
            try await values.wait { $0.last?.value?.first?[1] == .invalidUTF8Text(Data([0xff])) }
            // FF to FE: both read as U+FFFD as a String.
            try await database.write { db in try db.execute(sql: "UPDATE t SET v = CAST(x'fe' AS TEXT)") }
            try await values.wait { $0.last?.value?.first?[1] == .invalidUTF8Text(Data([0xfe])) }
            // "é" precomposed, then decomposed: equal as Swift strings.
            try await database.write { db in try db.execute(sql: "UPDATE t SET v = ?", arguments: ["\u{e9}"]) }
            try await values.wait { $0.last?.value?.first?[1] == .text("\u{e9}") }
            try await database.write { db in try db.execute(sql: "UPDATE t SET v = ?", arguments: ["e\u{301}"]) }
            try await values.wait { $0.last?.value?.first?[1] == .text("e\u{301}") }
            #expect(values.values.count == 4)
            let stored = try await database.read { db in try db.fetchOne(String.self, sql: "SELECT hex(v) FROM t") }
            #expect(stored == "65CC81")
        }
    }
}
