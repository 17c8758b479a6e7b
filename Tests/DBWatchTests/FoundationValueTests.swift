import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

@Suite("Foundation values: Date, UUID, URL, Decimal")
struct FoundationValueTests {
    struct Event: Decodable, Equatable {
        var at: Date
        var until: Date?
    }

    struct Session: Decodable, Equatable {
        var id: UUID
    }

    struct Item: Decodable, Equatable {
        var link: URL
        var price: Decimal
    }

    func date(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }

    @Test func storedAsUTCTextWithMilliseconds() async throws {
        let queue = try DatabaseQueue()
        let texts = try await queue.read { db in
            try [date(0), date(0.25), date(-0.001), date(951_782_400), date(1_700_000_000.123)].map {
                try db.fetchOne(String.self, sql: "SELECT ?", arguments: [$0])
            }
        }
        #expect(
            texts == [
                "1970-01-01 00:00:00.000", "1970-01-01 00:00:00.250", "1969-12-31 23:59:59.999",
                "2000-02-29 00:00:00.000", "2023-11-14 22:13:20.123",
            ])
    }

    /// Our calendar against SQLite's, on random instants from year 0 to 9999.
    @Test func storedTextMatchesSQLiteFormatting() async throws {
        let queue = try DatabaseQueue()
        try await queue.read { db in
            var generator = SeededGenerator(seed: 42)
            for _ in 0..<2000 {
                let seconds = Int64.random(in: -62_167_219_200...253_402_300_799, using: &generator)
                let milliseconds = Int64.random(in: 0...999, using: &generator)
                let ours = try db.fetchOne(
                    String.self, sql: "SELECT ?",
                    arguments: [date(Double(seconds) + Double(milliseconds) / 1000)])
                let sqlite = try db.fetchOne(
                    String.self,
                    sql: "SELECT strftime('%Y-%m-%d %H:%M:%S', ?, 'unixepoch') || printf('.%03d', ?)",
                    arguments: [seconds, milliseconds])
                #expect(ours == sqlite, "\(seconds).\(milliseconds)")
                if ours != sqlite { return }
            }
        }
    }

    /// Our reading of SQLite's date text against SQLite's own.
    @Test func readsTheTextSQLiteReads() async throws {
        let queue = try DatabaseQueue()
        try await queue.read { db in
            var generator = SeededGenerator(seed: 7)
            for index in 0..<1000 {
                let seconds = Int64.random(in: -62_167_219_200...253_402_300_799, using: &generator)
                let format = [
                    "%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%f", "%Y-%m-%dT%H:%M:%SZ",
                    "%Y-%m-%d %H:%M:%S+05:30", "%Y-%m-%d %H:%M-11:00",
                ][index % 7]
                let text = try #require(
                    try db.fetchOne(
                        String.self, sql: "SELECT strftime(?, ?, 'unixepoch')", arguments: [format, seconds]))
                let ours = try #require(try db.fetchOne(Date.self, sql: "SELECT ?", arguments: [text]), "\(text)")
                let sqlite = try #require(
                    try db.fetchOne(
                        Double.self, sql: "SELECT (julianday(?) - 2440587.5) * 86400.0", arguments: [text]))
                #expect(abs(ours.timeIntervalSince1970 - sqlite) < 0.001, "\(text)")
            }
        }
    }

    /// Random text near the date formats: whatever we read as a date,
    /// SQLite reads as the same instant (we may refuse more than it does:
    /// times without a date, impossible days).
    @Test func neverReadsTextSQLiteWouldNot() async throws {
        let queue = try DatabaseQueue()
        try await queue.read { db in
            var generator = SeededGenerator(seed: 99)
            let alphabet = Array("0123456789-: T.Z+z")
            let templates = ["2024-02-29 12:34:56.789+01:30", "1999-12-31T23:59Z", "0000-01-01", "2023-06-15 08:00:00"]
            var accepted = 0
            for _ in 0..<5000 {
                var characters = Array(templates.randomElement(using: &generator)!)
                for _ in 0..<Int.random(in: 0...3, using: &generator) {
                    let position = Int.random(in: 0...characters.count, using: &generator)
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0 where position < characters.count: characters.remove(at: position)
                    case 1 where position < characters.count:
                        characters[position] = alphabet.randomElement(using: &generator)!
                    default: characters.insert(alphabet.randomElement(using: &generator)!, at: position)
                    }
                }
                let text = String(characters)
                guard let ours = Date.fromDatabaseValue(.text(text)) else { continue }
                accepted += 1
                let sqlite = try db.fetchOne(
                    Double.self, sql: "SELECT (julianday(?) - 2440587.5) * 86400.0", arguments: [text])
                #expect(sqlite.map { abs($0 - ours.timeIntervalSince1970) < 0.001 } == true, "\(text)")
            }
            #expect(accepted > 1000)
        }
    }

    /// Whether SQLite reads `texts` as the instants we read, or refuses
    /// them as we do: the texts on each side of one of its limits.
    func expectSQLiteAgrees(_ texts: [String]) async throws {
        let queue = try DatabaseQueue()
        let sqlite = try await queue.read { db in
            try texts.map {
                try db.fetchOne(Double.self, sql: "SELECT (julianday(?) - 2440587.5) * 86400.0", arguments: [$0])
            }
        }
        for (text, sqlite) in zip(texts, sqlite) {
            let ours = Date.fromDatabaseValue(.text(text))?.timeIntervalSince1970
            #expect((ours == nil) == (sqlite == nil), "\(text): ours \(ours as Any), SQLite's \(sqlite as Any)")
            if let ours, let sqlite { #expect(abs(ours - sqlite) < 0.001, "\(text)") }
        }
    }

    /// SQLite reads offsets up to ±14:59 only; the text after a greater one
    /// is no date.
    @Test func offsetsBeyondFourteenHoursAreRefused() async throws {
        try await expectSQLiteAgrees([
            "2024-01-01 10:00+14:59", "2024-01-01 10:00-14:59", "2024-01-01 10:00+15:00", "2024-01-01 10:00-15:00",
            "2024-01-01 10:00:00.5+23:59", "0000-01-01 00:00+14:00", "0000-01-01 00:00+19:00",
        ])
    }

    /// SQLite reads no instant after 9999-12-31 23:59:59.999, which an
    /// offset or its rounding to the millisecond can reach from a valid day.
    @Test func instantsAfterYear9999AreRefused() async throws {
        try await expectSQLiteAgrees([
            "9999-12-31 23:59:59.999", "9999-12-31 23:59:59.99949", "9999-12-31 23:59:59.9995",
            "9999-12-31 23:59:59.9999999999", "9999-12-31 22:59:59.999-01:00", "9999-12-31 23:00-01:00",
            "9999-12-31 23:59+14:59", "9999-12-31 13:00-14:00", "9999-12-31T10:00:00.5-14:00",
        ])
    }

    @Test func roundTripsToTheMillisecond() async throws {
        let queue = try DatabaseQueue()
        let now = Date()
        let instants = [
            now, date(0), date(-1.5), date(1_700_000_000.123), Date.distantPast, Date.distantFuture,
            date(-62_167_219_200), date(253_402_300_799.999),
        ]
        let read = try await queue.write { db in
            try db.execute(sql: "CREATE TABLE event (at)")
            for instant in instants { try db.execute(sql: "INSERT INTO event VALUES (?)", arguments: [instant]) }
            return try db.fetchAll(Date.self, sql: "SELECT at FROM event ORDER BY rowid")
        }
        #expect(read.count == instants.count)
        for (stored, original) in zip(read, instants) {
            let expected = (original.timeIntervalSince1970 * 1000).rounded() / 1000
            #expect(abs(stored.timeIntervalSince1970 - expected) < 0.000_1, "\(original)")
        }
    }

    /// Years beyond what the text holds are stored as seconds since 1970,
    /// which read back exactly.
    @Test func datesBeyondYear9999AreStoredAsNumbers() async throws {
        let queue = try DatabaseQueue()
        let (stored, read) = try await queue.read { db in
            let far = date(1e13)
            let stored = try db.fetchOne(sql: "SELECT ?", arguments: [far])![0]
            return (stored, try db.fetchOne(Date.self, sql: "SELECT ?", arguments: [far]))
        }
        #expect(stored == .real(1e13))
        #expect(read == date(1e13))
    }

    /// The numbers of SQLite's functions read as seconds since 1970;
    /// `strftime('%s')` gives text, which is no date (SQLite would read
    /// those digits as a Julian day) until cast to an integer.
    @Test func unixSecondsFromSQLiteFunctions() async throws {
        let queue = try DatabaseQueue()
        let (epoch, cast) = try await queue.read { db in
            (
                try db.fetchOne(Date.self, sql: "SELECT unixepoch('2024-01-01 00:00:10')"),
                try db.fetchOne(Date.self, sql: "SELECT CAST(strftime('%s', '2024-01-01 00:00:10') AS INTEGER)")
            )
        }
        #expect(epoch == date(1_704_067_210))
        #expect(cast == date(1_704_067_210))
        await #expect(throws: DecodingError.self) {
            try await queue.read { db in try db.fetchOne(Date.self, sql: "SELECT strftime('%s', '2024-01-01')") }
        }
    }

    /// A Unix timestamp in a `Decodable` property: `Date`'s own `Decodable`
    /// form would read it as seconds since 2001, 31 years late, silently.
    @Test func decodablePropertiesReadUnixTimestampsAndText() async throws {
        let queue = try DatabaseQueue()
        let events = try await queue.read { db in
            try db.fetchAll(
                Event.self,
                sql: """
                    SELECT 1700000000 AS at, NULL AS until
                    UNION ALL SELECT '2024-02-29 12:00:00.5', 86400.25
                    UNION ALL SELECT '2024-02-29T12:00:00+02:00', '1970-01-01'
                    """)
        }
        #expect(
            events == [
                Event(at: date(1_700_000_000), until: nil),
                Event(at: date(1_709_208_000.5), until: date(86_400.25)),
                Event(at: date(1_709_200_800), until: date(0)),
            ])
    }

    @Test func textThatIsNotADateThrows() async throws {
        let queue = try DatabaseQueue()
        let refused = [
            "12:00", "12:00:00", "2023-02-29", "2024-13-01", "2024-00-10", "2024-04-31", "2024-01-01 24:00",
            "2024-01-01 10:60", "2024-01-01 10:00:60", "2024-01-01 10:00:00.", "2024-01-01 10:00 +02:00",
            "2024-01-01 10:00+2", "2024-01-01 ", "24-01-01", "2024/01/01", "yesterday", "",
        ]
        for text in refused {
            await #expect(throws: DecodingError.self, "\(text)") {
                try await queue.read { db in try db.fetchOne(Date.self, sql: "SELECT ?", arguments: [text]) }
            }
            #expect(Date.fromDatabaseValue(.text(text)) == nil, "\(text)")
        }
        #expect(Date.fromDatabaseValue(.blob(Data("2024-01-01".utf8))) == nil)
        #expect(Date.fromDatabaseValue(.real(.infinity)) == nil)
        await #expect(throws: DecodingError.self) {
            try await queue.read { db in
                try db.fetchAll(Event.self, sql: "SELECT 'soon' AS at, NULL AS until")
            }
        }
    }

    @Test func fractionsOfAnyLength() {
        #expect(Date.fromDatabaseValue(.text("1970-01-01 00:00:01.5")) == date(1.5))
        #expect(Date.fromDatabaseValue(.text("1970-01-01 00:00:01.123456")) == date(1.123456))
        #expect(Date.fromDatabaseValue(.text("1970-01-01 00:00:01.1234567891234")) == date(1.123456789))
        #expect(Date.fromDatabaseValue(.text("1970-01-01T00:00z")) == date(0))
    }

    @Test func uuidsRoundTripAsBlobsAndReadText() async throws {
        let id = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        let queue = try DatabaseQueue()
        let (stored, sessions) = try await queue.write { db in
            try db.execute(sql: "CREATE TABLE session (id)")
            try db.execute(sql: "INSERT INTO session VALUES (?)", arguments: [id])
            try db.execute(sql: "INSERT INTO session VALUES (?)", arguments: [id.uuidString.lowercased()])
            let stored = try db.fetchOne(sql: "SELECT id FROM session ORDER BY rowid")![0]
            return (stored, try db.fetchAll(Session.self, sql: "SELECT id FROM session ORDER BY rowid"))
        }
        #expect(
            stored
                == .blob(
                    Data([
                        0xE6, 0x21, 0xE1, 0xF8, 0xC3, 0x6C, 0x49, 0x5A, 0x93, 0xFC, 0x0C, 0x24, 0x7A, 0x3E, 0x6E, 0x5F,
                    ])))
        #expect(sessions == [Session(id: id), Session(id: id)])
        await #expect(throws: DecodingError.self) {
            try await queue.read { db in try db.fetchOne(UUID.self, sql: "SELECT x'0102'") }
        }
        await #expect(throws: DecodingError.self) {
            try await queue.read { db in try db.fetchAll(Session.self, sql: "SELECT 'not-a-uuid' AS id") }
        }
    }

    @Test func urlsAndDecimalsRoundTripAsText() async throws {
        let url = try #require(URL(string: "https://sqlite.org/lang_datefunc.html?x=1#top"))
        let price = try #require(Decimal(string: "12345678901234567890.12345"))
        let queue = try DatabaseQueue()
        let (stored, items) = try await queue.write { db in
            try db.execute(sql: "CREATE TABLE item (link, price)")
            try db.execute(sql: "INSERT INTO item VALUES (?, ?)", arguments: [url, price])
            try db.execute(sql: "INSERT INTO item VALUES ('https://a.b', 0.1), ('https://c.d', 7)")
            let stored = try db.fetchOne(sql: "SELECT link, price FROM item ORDER BY rowid")!
            return (stored, try db.fetchAll(Item.self, sql: "SELECT link, price FROM item ORDER BY rowid"))
        }
        #expect(stored[0] == .text("https://sqlite.org/lang_datefunc.html?x=1#top"))
        #expect(stored[1] == .text("12345678901234567890.12345"))
        #expect(
            items == [
                Item(link: url, price: price),
                Item(link: URL(string: "https://a.b")!, price: Decimal(string: "0.1")!),
                Item(link: URL(string: "https://c.d")!, price: 7),
            ])
    }

    @Test func decimalsReadOnlyWholeNumbers() {
        #expect(Decimal.fromDatabaseValue(.text("-1.5")) == Decimal(string: "-1.5"))
        #expect(Decimal.fromDatabaseValue(.text("+2e3")) == 2000)
        #expect(Decimal.fromDatabaseValue(.text(".5")) == Decimal(string: "0.5"))
        #expect(Decimal.fromDatabaseValue(.text("5.")) == 5)
        for text in ["12abc", "", "-", ".", "1e", "1e+", "NaN", "inf", "1.2.3", " 1", "1 ", "0x10", "1,5", "1e999"] {
            #expect(Decimal.fromDatabaseValue(.text(text)) == nil, "\(text)")
        }
        #expect(Decimal.fromDatabaseValue(.real(.infinity)) == nil)
        #expect(Decimal.fromDatabaseValue(.blob(Data("1".utf8))) == nil)
        #expect(URL.fromDatabaseValue(.integer(1)) == nil)
    }
}
