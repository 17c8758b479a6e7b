import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatchPostgres

@Suite("Column mapping")
struct ColumnMappingTests {
    /// The value of `text` for the type `oid`.
    private func value(_ oid: UInt32, _ text: String) throws -> DatabaseValue {
        let mapping = try #require(ColumnMapping(typeOID: oid))
        return try mapping.databaseValue(fromText: Array(text.utf8))
    }

    /// Whether converting `text` for the type `oid` throws.
    private func refuses(_ oid: UInt32, _ text: String) -> Bool {
        refuses(oid, Array(text.utf8))
    }

    private func refuses(_ oid: UInt32, _ bytes: [UInt8]) -> Bool {
        guard let mapping = ColumnMapping(typeOID: oid) else { return false }
        do {
            _ = try mapping.databaseValue(fromText: bytes)
            return false
        } catch {
            return true
        }
    }

    @Test("Built-in types and their arrays map to their kinds")
    func typeOIDs() {
        let scalars: [(UInt32, ColumnMapping.Kind, String)] = [
            (21, .integer, "INTEGER"), (23, .integer, "INTEGER"), (20, .integer, "INTEGER"), (26, .integer, "INTEGER"),
            (700, .float, "REAL"), (701, .float, "REAL"), (1700, .numeric, "TEXT"), (25, .text, "TEXT"),
            (1043, .text, "TEXT"), (1042, .text, "TEXT"), (19, .text, "TEXT"), (18, .text, "TEXT"),
            (16, .boolean, "INTEGER"), (17, .bytes, "BLOB"), (1114, .timestamp, "TEXT"), (1184, .timestamp, "TEXT"),
            (1082, .date, "TEXT"), (1083, .time, "TEXT"), (114, .json, "TEXT"), (3802, .json, "TEXT"),
            (2950, .uuid, "TEXT"),
        ]
        for (oid, kind, declaredType) in scalars {
            #expect(ColumnMapping(typeOID: oid) == ColumnMapping(kind: kind, typeOID: oid))
            #expect(ColumnMapping(typeOID: oid)?.declaredType == declaredType)
        }
        let arrays: [(UInt32, ColumnMapping.Kind)] = [
            (1005, .integer), (1007, .integer), (1016, .integer), (1028, .integer), (1021, .float), (1022, .float),
            (1231, .numeric), (1009, .text), (1015, .text), (1014, .text), (1003, .text), (1002, .text),
            (1000, .boolean), (1001, .bytes), (1115, .timestamp), (1185, .timestamp), (1182, .date), (1183, .time),
            (199, .json), (3807, .json), (2951, .uuid),
        ]
        for (oid, element) in arrays {
            #expect(ColumnMapping(typeOID: oid) == ColumnMapping(kind: .array(of: element), typeOID: oid))
            #expect(ColumnMapping(typeOID: oid)?.declaredType == "TEXT")
        }
        #expect(ColumnMapping.enumeration(typeOID: 0x4014) == ColumnMapping(kind: .text, typeOID: 0x4014))
    }

    @Test(
        "Types that cannot be stored faithfully have no mapping",
        arguments: [
            0, 790, 1186, 869, 650, 829, 600, 142, 1560, 1562, 3614, 3615, 3904, 4451, 2249, 1266, 1187, 791, 1041,
            1270,
            3910, 2277,
        ] as [UInt32])
    func unsupportedTypes(oid: UInt32) {
        #expect(ColumnMapping(typeOID: oid) == nil)
    }

    @Test("Integers are exact over the whole 64-bit range")
    func integers() throws {
        #expect(try value(21, "-32768") == .integer(-32768))
        #expect(try value(23, "2147483647") == .integer(2_147_483_647))
        #expect(try value(20, "9223372036854775807") == .integer(.max))
        #expect(try value(20, "-9223372036854775808") == .integer(.min))
        #expect(try value(26, "4294967295") == .integer(4_294_967_295))
        #expect(try value(20, "0") == .integer(0))
        for text in [
            "9223372036854775808", "-9223372036854775809", "99999999999999999999", "", "-", "1a", "+1", "01", " 1",
            "1.0",
        ] {
            #expect(refuses(20, text), "\(text)")
        }
    }

    @Test("Floats read as doubles, infinities included; NaN is refused")
    func floats() throws {
        #expect(try value(701, "1.5") == .real(1.5))
        #expect(try value(701, "0.1") == .real(0.1))
        #expect(try value(701, "1e+308") == .real(1e308))
        #expect(try value(701, "1.7976931348623157e+308") == .real(.greatestFiniteMagnitude))
        #expect(try value(701, "5e-324") == .real(5e-324))
        #expect(try value(701, "1e-07") == .real(1e-7))
        #expect(try value(701, "1.2345678901234568e+17") == .real(1.2345678901234568e17))
        #expect(try value(701, "Infinity") == .real(.infinity))
        #expect(try value(701, "-Infinity") == .real(-.infinity))
        guard case .real(let negativeZero) = try value(701, "-0") else {
            Issue.record("not a real")
            return
        }
        #expect(negativeZero == 0 && negativeZero.sign == .minus)
        // float4's shortest text, read as the double of that decimal.
        #expect(try value(700, "1.1") == .real(1.1))
        for text in ["NaN", "1e309", "-1e309", "inf", "infinity", "0x1p3", "", "1.", ".5", "1e", "1,5", " 1"] {
            #expect(refuses(701, text), "\(text)")
        }
    }

    @Test("Numerics keep their exact digits as text; NaN and infinities are refused")
    func numerics() throws {
        #expect(try value(1700, "1.50") == .text("1.50"))
        #expect(try value(1700, "-0.000001") == .text("-0.000001"))
        #expect(try value(1700, "100000000000000000000") == .text("100000000000000000000"))
        #expect(
            try value(1700, "123456789012345678901234567890.123456789")
                == .text("123456789012345678901234567890.123456789"))
        for text in ["NaN", "Infinity", "-Infinity", "1e5", "", "1.", "-", "1.5.0", "abc"] {
            #expect(refuses(1700, text), "\(text)")
        }
    }

    @Test("Bools are 1 and 0")
    func bools() throws {
        #expect(try value(16, "t") == .integer(1))
        #expect(try value(16, "f") == .integer(0))
        #expect(try value(16, "true") == .integer(1))
        #expect(try value(16, "false") == .integer(0))
        for text in ["", "T", "yes", "1", "tt"] {
            #expect(refuses(16, text), "\(text)")
        }
    }

    @Test("Bytea in hex output is a blob")
    func bytea() throws {
        #expect(try value(17, "\\x") == .blob(Data()))
        #expect(try value(17, "\\x00ff7F") == .blob(Data([0, 255, 127])))
        for text in ["", "\\", "\\x0", "\\xzz", "abc", "\\000", "x00"] {
            #expect(refuses(17, text), "\(text)")
        }
    }

    @Test("Timestamps are stored as DBWatch stores dates, in UTC, rounded to the millisecond")
    func timestamps() throws {
        #expect(try value(1184, "2026-11-24 23:41:24.615767+00") == .text("2026-11-24 23:41:24.616"))
        #expect(try value(1184, "2026-11-24 23:41:24+00") == .text("2026-11-24 23:41:24.000"))
        #expect(try value(1184, "2026-11-24 23:41:24.5+00") == .text("2026-11-24 23:41:24.500"))
        #expect(try value(1114, "2026-11-24 23:41:24.615767") == .text("2026-11-24 23:41:24.616"))
        #expect(try value(1114, "2026-11-24 23:41:24.1234") == .text("2026-11-24 23:41:24.123"))
        // Offsets, when the session's time zone is not UTC.
        #expect(try value(1184, "2026-11-24 23:41:24.615767+05:30") == .text("2026-11-24 18:11:24.616"))
        #expect(try value(1184, "2026-11-24 20:00:00-08") == .text("2026-11-25 04:00:00.000"))
        #expect(try value(1184, "1880-01-01 00:00:00+00:53:28") == .text("1879-12-31 23:06:32.000"))
        // Rounding carries into the next day, month and year; ties go away from 1970.
        #expect(try value(1184, "2026-12-31 23:59:59.9995+00") == .text("2027-01-01 00:00:00.000"))
        #expect(try value(1114, "2026-11-24 23:41:24.0005") == .text("2026-11-24 23:41:24.001"))
        #expect(try value(1114, "2026-11-24 23:41:24.0004") == .text("2026-11-24 23:41:24.000"))
        #expect(try value(1114, "1900-01-01 00:00:00.0005") == .text("1900-01-01 00:00:00.000"))
        #expect(try value(1114, "1900-01-01 00:00:00.0006") == .text("1900-01-01 00:00:00.001"))
        #expect(try value(1114, "2024-02-29 12:00:00") == .text("2024-02-29 12:00:00.000"))
        #expect(try value(1114, "0001-01-01 00:00:00") == .text("0001-01-01 00:00:00.000"))
        #expect(try value(1114, "9999-12-31 23:59:59.999") == .text("9999-12-31 23:59:59.999"))
        for text in [
            "infinity", "-infinity", "0001-01-01 00:00:00+00 BC", "2026-11-24 23:41:24 BC", "10000-01-01 00:00:00+00",
            "9999-12-31 23:59:59.9996+00", "2023-02-29 00:00:00", "2026-13-01 00:00:00", "2026-11-24T23:41:24",
            "2026-11-24 24:00:00", "2026-11-24 23:60:00", "2026-11-24 23:41:60", "2026-11-24 23:41:24.1234567",
            "2026-11-24 23:41:24.", "2026-11-24 23:41:24+", "2026-11-24 23:41:24+5", "2026-11-24 23:41:24+05:",
            "2026-11-24 23:41:24+05:60", "2026-11-24 23:41:24+00x", "2026-11-24", "", "0000-12-31 00:00:00",
        ] {
            #expect(refuses(1184, text), "\(text)")
        }
    }

    @Test("Timestamps give the text of Date.databaseValue for the same instant")
    func timestampsMatchDates() throws {
        var generator = SeededGenerator(seed: 1184)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for _ in 0..<2000 {
            // 1880 to 2060: doubles of seconds since 1970 are exact to
            // well under a microsecond there.
            let year = Int.random(in: 1880...2060, using: &generator)
            let month = Int.random(in: 1...12, using: &generator)
            let day = Int.random(in: 1...28, using: &generator)
            let hour = Int.random(in: 0...23, using: &generator)
            let minute = Int.random(in: 0...59, using: &generator)
            let second = Int.random(in: 0...59, using: &generator)
            var microsecond = Int.random(in: 0...999_999, using: &generator)
            // Away from ties, where the double's rounding may differ.
            if (490...510).contains(microsecond % 1000) { microsecond -= 20 }
            let offsetMinutes = [0, 330, -480, 60, -150].randomElement(using: &generator)!
            let components = DateComponents(
                year: year, month: month, day: day, hour: hour, minute: minute, second: second)
            let local = try #require(calendar.date(from: components))
            let instant = Date(
                timeIntervalSince1970: local.timeIntervalSince1970 - Double(offsetMinutes * 60) + Double(microsecond)
                    / 1e6)
            func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
            var fraction = String(microsecond)
            fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
            let sign = offsetMinutes < 0 ? "-" : "+"
            let text =
                "\(year)-\(two(month))-\(two(day)) \(two(hour)):\(two(minute)):\(two(second)).\(fraction)"
                + "\(sign)\(two(abs(offsetMinutes) / 60)):\(two(abs(offsetMinutes) % 60))"
            #expect(try value(1184, text) == instant.databaseValue, "\(text)")
        }
    }

    @Test("Dates are yyyy-MM-dd text; infinite and BC dates are refused")
    func dates() throws {
        #expect(try value(1082, "2026-11-24") == .text("2026-11-24"))
        #expect(try value(1082, "2024-02-29") == .text("2024-02-29"))
        #expect(try value(1082, "0001-01-01") == .text("0001-01-01"))
        for text in [
            "2023-02-29", "2026-04-31", "infinity", "-infinity", "0044-03-15 BC", "10000-01-01", "2026-1-24",
            "2026-11-24 ", "0000-01-01", "", "2026/11/24",
        ] {
            #expect(refuses(1082, text), "\(text)")
        }
    }

    @Test("Times are kept as text")
    func times() throws {
        #expect(try value(1083, "23:41:24") == .text("23:41:24"))
        #expect(try value(1083, "23:41:24.615767") == .text("23:41:24.615767"))
        #expect(try value(1083, "24:00:00") == .text("24:00:00"))
        for text in ["24:00:01", "23:60:00", "1:00:00", "23:41:24.", "23:41:24.1234567", "23:41", "", "23:41:24+00"] {
            #expect(refuses(1083, text), "\(text)")
        }
    }

    @Test("Text, uuid and json are kept as they are")
    func texts() throws {
        #expect(try value(25, "") == .text(""))
        #expect(try value(25, "héllo 🌍 \"quoted\"\n") == .text("héllo 🌍 \"quoted\"\n"))
        #expect(try value(1042, "ab  ") == .text("ab  "))
        #expect(
            try ColumnMapping.enumeration(typeOID: 0x4014).databaseValue(fromText: Array("happy".utf8))
                == .text("happy"))
        #expect(refuses(25, [0x61, 0xFF]))
        #expect(
            try value(2950, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11") == .text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))
        for text in [
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "",
        ] {
            #expect(refuses(2950, text), "\(text)")
        }
        #expect(try value(114, "{\"a\" : [1, 2.5e3]}") == .text("{\"a\" : [1, 2.5e3]}"))
        #expect(
            try value(3802, "{\"a\": null, \"b\": [1, 2500, \"x\\\"y\\u00e9\"]}")
                == .text("{\"a\": null, \"b\": [1, 2500, \"x\\\"y\\u00e9\"]}"))
        #expect(try value(3802, "\"é\"") == .text("\"é\""))
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(try value(3802, deep) == .text(deep))
        for text in ["", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "tru", "01", "\"a", "[1] 2", "{\"a\":1,}", "\"\\x\""] {
            #expect(refuses(3802, text), "\(text)")
        }
    }

    @Test("Arrays become JSON arrays, their elements converted by kind")
    func arrays() throws {
        let cases: [(UInt32, String, String)] = [
            (1007, "{1,2,NULL}", "[1,2,null]"),
            (1007, "{}", "[]"),
            (1007, "{{1,2},{3,4}}", "[[1,2],[3,4]]"),
            (1007, "{{{1},{2}},{{3},{4}}}", "[[[1],[2]],[[3],[4]]]"),
            (1007, "{\"1\",null,Null}", "[1,null,null]"),
            (1016, "{9223372036854775807,-9223372036854775808}", "[9223372036854775807,-9223372036854775808]"),
            (
                1009, "{\"a b\",\"c\\\"d\",NULL,\"NULL\",plain,\"back\\\\slash\",\"\",\"new\nline\",é,\"{x}\",\"a,b\"}",
                "[\"a b\",\"c\\\"d\",null,\"NULL\",\"plain\",\"back\\\\slash\",\"\",\"new\\nline\",\"é\",\"{x}\",\"a,b\"]"
            ),
            (1009, "{\"tab\there\",\"\u{1}\"}", "[\"tab\\there\",\"\\u0001\"]"),
            (1014, "{\"ab  \"}", "[\"ab  \"]"),
            (1002, "{a,\" \"}", "[\"a\",\" \"]"),
            (1003, "{pg_class}", "[\"pg_class\"]"),
            (1022, "{1.5,-0,1e+308,NULL}", "[1.5,-0,1e+308,null]"),
            (1021, "{1.1,5e-07}", "[1.1,5e-07]"),
            (1231, "{1.50,-0.001,NULL}", "[1.50,-0.001,null]"),
            (1000, "{t,f,NULL}", "[true,false,null]"),
            (1001, "{\"\\\\x00fF\",\"\\\\x\",NULL}", "[\"00ff\",\"\",null]"),
            (1185, "{\"2026-11-24 23:41:24.615767+00\",NULL}", "[\"2026-11-24 23:41:24.616\",null]"),
            (1115, "{\"2026-11-24 23:41:24.615767\"}", "[\"2026-11-24 23:41:24.616\"]"),
            (1182, "{2026-11-24,NULL}", "[\"2026-11-24\",null]"),
            (1183, "{23:41:24.5}", "[\"23:41:24.5\"]"),
            (199, "{\"{\\\"a\\\": 1}\",\"[1, \\\"x\\\"]\",NULL}", "[{\"a\": 1},[1, \"x\"],null]"),
            (3807, "{\"{\\\"a\\\": \\\"q\\\\\\\"b\\\"}\",\"null\"}", "[{\"a\": \"q\\\"b\"},null]"),
            (2951, "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", "[\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"]"),
        ]
        for (oid, text, json) in cases {
            #expect(try value(oid, text) == .text(json), "\(oid) \(text)")
            // What SQLite reads back is the same JSON.
            let _: Any = try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
        }
    }

    @Test("Array text that is not PostgreSQL's output is refused")
    func badArrays() {
        let cases: [(UInt32, String)] = [
            (1007, "[0:1]={1,2}"), (1007, "[1:1][1:2]={{1,2}}"), (1007, ""), (1007, "{"), (1007, "{1,2"),
            (1007, "{1,,2}"),
            (1007, "{1,}"), (1007, "{,1}"), (1007, "{1,2}x"), (1007, "{1,2}}"), (1007, "{a}"), (1007, "{1,{2}}"),
            (1007, "{{1},2}"), (1007, "{{{{{{{1}}}}}}}"), (1007, "{ 1}"), (1007, "{\"1}"), (1007, "{\"1\\\"}"),
            (1007, "{1\"}"), (1007, "1,2"), (1007, "{9223372036854775808}"), (1022, "{Infinity}"), (1022, "{NaN}"),
            (1231, "{NaN}"), (1000, "{x}"), (1001, "{\"\\\\x0\"}"), (1001, "{\"\\\\xzz\"}"), (1185, "{infinity}"),
            (1182, "{2026-02-30}"), (1183, "{25:00:00}"), (199, "{\"{\\\"a\\\":}\"}"), (2951, "{abc}"),
        ]
        for (oid, text) in cases {
            #expect(refuses(oid, text), "\(oid) \(text)")
        }
        #expect(refuses(1009, [UInt8(ascii: "{"), 0xFF, UInt8(ascii: "}")]))
        // Six dimensions is PostgreSQL's limit.
        #expect(!refuses(1007, "{{{{{{1}}}}}}"))
    }

    @Test("A refused value's error gives its text, shortened, and why")
    func errorsSayWhy() throws {
        func error(_ oid: UInt32, _ text: String) throws -> ValueConversionError {
            let mapping = try #require(ColumnMapping(typeOID: oid))
            do {
                _ = try mapping.databaseValue(fromText: Array(text.utf8))
            } catch {
                return error
            }
            throw ValueConversionError(text: text, reason: "converted")
        }
        #expect(try error(701, "NaN") == ValueConversionError(text: "NaN", reason: "NaN, which SQLite stores as NULL"))
        #expect(try error(1184, "infinity").reason == "infinite timestamp, which has no date text")
        #expect(try error(1184, "10000-01-01 00:00:00+00").reason.contains("after the year 9999"))
        #expect(try error(1082, "0044-03-15 BC").reason.contains("BC"))
        #expect(try error(1184, "0001-01-01 00:00:00+00 BC").reason.contains("BC"))
        #expect(try error(1007, "[0:1]={1,2}").reason.contains("explicit bounds"))
        #expect(try error(20, "9223372036854775808").reason == "integer out of the 64-bit range")
        let long = try error(1009, "{" + String(repeating: "é", count: 300) + "\u{FFFF}")
        #expect(long.text == "{" + String(repeating: "é", count: 99) + "…")
    }

    @Test("Random text never crashes a conversion")
    func garbageNeverCrashes() {
        var generator = SeededGenerator(seed: 25)
        let alphabet = Array("{}[]:=,\"\\ NULLtfx0123456789.-+eE:ABCDEFabcdef\u{1}".utf8) + [0xC3, 0xA9, 0xFF]
        let oids: [UInt32] = [20, 701, 1700, 16, 17, 1184, 1082, 1083, 3802, 2950, 1007, 1009, 1022, 1001, 1185, 3807]
        for _ in 0..<20_000 {
            let count = Int.random(in: 0..<40, using: &generator)
            let bytes = (0..<count).map { _ in alphabet.randomElement(using: &generator)! }
            _ = refuses(oids.randomElement(using: &generator)!, bytes)
        }
    }
}
