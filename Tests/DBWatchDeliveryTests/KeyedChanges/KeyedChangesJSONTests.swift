import DBWatchDelivery
import Foundation
import Testing

/// The JSON of keyed changes: exact bytes, keys and rows as they are, and
/// the decoder that reads them back.
@Suite("Keyed changes: JSON")
struct KeyedChangesJSONTests {
    func text(_ changes: KeyedChanges) -> String { String(decoding: changes.encodedJSON(), as: UTF8.self) }

    @Test func theEncodingIsExactWithIndexAndRowLeftOutWhenNil() {
        let changes = KeyedChanges(
            deletes: [json("3"), json(#"[1,"x"]"#)],
            upserts: [
                .init(key: json("7"), index: 0, row: json(#"{"id":7,"score":1.50}"#)),
                .init(key: json("8"), index: 2),
                .init(key: json(#""k""#), row: json("[1e999,null]")),
            ])
        #expect(
            text(changes)
                == #"{"delete":[3,[1,"x"]],"upsert":[{"key":7,"index":0,"row":{"id":7,"score":1.50}},{"key":8,"index":2},{"key":"k","row":[1e999,null]}]}"#
        )
        #expect(text(KeyedChanges()) == #"{"delete":[],"upsert":[]}"#)
    }

    @Test func decodingKeepsTheBytesOfKeysAndRowsAndSkipsWhitespaceAndUnknownMembers() throws {
        let changes = try KeyedChanges(
            json: json(
                """
                { "version": {"a": [1, 2]},
                  "upsert": [ {"row": [1.50, "a\\"b", 1E+3], "extra": true, "key": [1,"x"], "index": 12 } ],
                  "delete": [ 1.0 , "\\u00e9" ] }
                """))
        #expect(changes.deletes == [json("1.0"), json(#""\u00e9""#)])
        #expect(changes.upserts == [.init(key: json(#"[1,"x"]"#), index: 12, row: json(#"[1.50, "a\"b", 1E+3]"#))])
        #expect(try KeyedChanges(json: json("{}")) == KeyedChanges())
    }

    @Test func decodingTheEncodingGivesTheSameChanges() throws {
        let changes = KeyedChanges(
            deletes: [json("-0.5")],
            upserts: [.init(key: json(#""a""#), index: 0), .init(key: json("2"), row: json("null"))])
        #expect(try KeyedChanges(json: changes.encodedJSON()) == changes)
    }

    @Test func invalidJSONOrShapeIsATypedError() {
        let invalid = [
            "", "{", "[]", #"{"delete":[1,]}"#, #"{"delete":[01]}"#, #"{"upsert":[{"index":1}]}"#,
            #"{"upsert":[{"key":1,"index":-1}]}"#, #"{"upsert":[{"key":1,"index":1.0}]}"#,
            #"{"upsert":[{"key":1,"index":"1"}]}"#, #"{"delete":["a]}"#, #"{"delete":[tru]}"#,
            #"{"delete":[]} x"#, #"{"delete":["\x"]}"#, #"{"delete":[1.]}"#, #"{"delete":[{"a" 1}]}"#,
            #"{"delete":"# + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}",
        ]
        for text in invalid {
            let error = #expect(throws: KeyedRowsError.self, "\(text.prefix(40))") {
                try KeyedChanges(json: json(text))
            }
            #expect(error?.isInvalidJSON == true, "\(text.prefix(40))")
        }
    }
}
