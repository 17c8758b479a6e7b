import DBWatch
import DBWatchClient
import Foundation
import Testing

@testable import dbwatch

/// What `watch` reads from a server: JSON with numbers as written, the
/// server-sent events framing in pieces of any size, served values as
/// query results, and served queries' addresses.
@Suite("Reading served values")
struct ServedValueParsingTests {
    @Test func jsonNumbersStringsAndNestingReadBackAsWritten() throws {
        let text = #" {"a": [1, -2.50, 1e999, true, null], "b": "x\"\\\/\n\u00e9\ud83d\ude00", "c": {}} "#
        let json = try JSON.parse(Array(text.utf8))
        #expect(json["a"] == .array([.number("1"), .number("-2.50"), .number("1e999"), .bool(true), .null]))
        #expect(json["b"] == .string("x\"\\/\né😀"))
        #expect(json["c"] == .object([]))
        #expect(try JSON.parse(Array(json.rendered().utf8)) == json)
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\" 1}", "01x", "1.", "-", "\"\u{01}\"", "\"\\x\"", "\"\\u12\"", "[1] 2", "tru",
        String(repeating: "[", count: 300) + String(repeating: "]", count: 300),
    ])
    func textThatIsNotOneJSONValueIsAnError(_ text: String) {
        #expect(throws: JSON.ParseError.self) { try JSON.parse(Array(text.utf8)) }
    }

    @Test func eventsAreCutTheSameWhateverThePiecesTheStreamArrivesIn() throws {
        let stream = Array(
            ": keep-alive\n\nid: 1-a\ndata: {\"n\":1}\n\r\nevent: error\r\ndata: line one\ndata: line two\n\n\ndata\n\n"
                .utf8)
        let expected = [
            ServerSentEventParser.Event(type: nil, data: #"{"n":1}"#, id: "1-a"),
            ServerSentEventParser.Event(type: "error", data: "line one\nline two", id: "1-a"),
            ServerSentEventParser.Event(type: nil, data: "", id: "1-a"),
        ]
        var whole = ServerSentEventParser()
        #expect(try whole.feed(stream) == expected)
        for size in [1, 2, 3, 7] {
            var parser = ServerSentEventParser()
            var events: [ServerSentEventParser.Event] = []
            for start in stride(from: 0, to: stream.count, by: size) {
                events += try parser.feed(stream[start..<min(start + size, stream.count)])
            }
            #expect(events == expected, "pieces of \(size) bytes")
        }
    }

    @Test func aLineBeyondTheLimitIsAnError() {
        var parser = ServerSentEventParser(maximumLineLength: 8)
        #expect(throws: ServerSentEventParser.LineTooLong.self) { try parser.feed(Array("data: 123456789".utf8)) }
    }

    @Test func servedRowsBecomeDatabaseValuesWithTheirKey() throws {
        let text =
            #"{"columns":["id","r","b","t"],"rows":[[1,2.0,{"base64":"AAE="},"x"],[2,1e999,null,{"text_base64":"/w=="}]]}"#
        let result = try QueryResult(servedJSON: Array(text.utf8), keyNames: ["id"])
        #expect(result.columns == ["id", "r", "b", "t"])
        #expect(result.rows[0] == [.integer(1), .real(2), .blob(Data([0, 1])), .text("x")])
        #expect(result.rows[1] == [.integer(2), .real(.infinity), .null, .invalidUTF8Text(Data([0xFF]))])
        #expect(result.keyColumns == [0])
        #expect(try QueryResult(servedJSON: Array(text.utf8), keyNames: ["missing"]).keyColumns == nil)
    }

    @Test func otherValuesBecomeRowsOfObjectsOrOneCell() throws {
        let objects = try QueryResult(
            servedJSON: Array(#"[{"name":"a","score":1},{"name":"b","team":"red"}]"#.utf8), keyNames: nil)
        #expect(objects.columns == ["name", "score", "team"])
        #expect(objects.rows == [[.text("a"), .integer(1), .null], [.text("b"), .null, .text("red")]])
        let scalar = try QueryResult(servedJSON: Array("42".utf8), keyNames: nil)
        #expect(scalar.columns == ["value"])
        #expect(scalar.rows == [[.integer(42)]])
        #expect(throws: (any Error).self) {
            try QueryResult(servedJSON: Array(#"{"columns":["a"],"rows":[[1,2]]}"#.utf8), keyNames: nil)
        }
    }

    @Test func anAddressNamesTheServerAndTheQueryUnderAnyPrefix() throws {
        let plain = try ServedQueryAddress.parse("http://127.0.0.1:8080/queries/top?n=10&team=red%20one")
        #expect(plain.base == "http://127.0.0.1:8080")
        #expect(plain.eventsURL == "http://127.0.0.1:8080/queries/top/events?n=10&team=red%20one")
        let prefixed = try ServedQueryAddress.parse("HTTPS://[::1]/api/v1/queries/top/events/")
        #expect(prefixed.valueURL == "https://[::1]/api/v1/queries/top")
        #expect(prefixed.listURL == "https://[::1]/api/v1/queries")
        for text in ["http://127.0.0.1/", "http:///queries/top", "ftp://host/queries/top", "http://host/queries/"] {
            #expect(throws: CommandFailure.self, "\(text)") { try ServedQueryAddress.parse(text) }
        }
        #expect(ServedQueryAddress.isAddress("Http://x") && !ServedQueryAddress.isAddress("app.sqlite"))
    }
}
