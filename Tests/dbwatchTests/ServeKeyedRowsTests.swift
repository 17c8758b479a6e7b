import DBWatch
import DBWatchDelivery
import Foundation
import Testing

@testable import dbwatch

/// `serve`'s rows as keyed rows: each row's JSON is exactly the row of the
/// whole value's JSON (numbers as written there), keyed by its key
/// columns' values.
@Suite("serve: keyed rows of a result")
struct ServeKeyedRowsTests {
    let result = QueryResult(
        columns: ["id", "name", "score", "data"],
        rows: [
            [.integer(1), .text("Arthur \"A\""), .real(0.1), .blob(Data([0, 1]))],
            [.integer(2), .text("Barbara"), .real(.infinity), .null],
            [.integer(3), .text("Craig"), .real(1e300), .real(-0.0)],
        ],
        keyColumns: [0])

    @Test func eachRowIsTheWholeValuesRowByteForByte() throws {
        let keyed = try result.keyedRows(key: ["id"])
        let whole = String(decoding: try result.encodedJSON(), as: UTF8.self)
        let rows = keyed.rows.map { String(decoding: $0.row, as: UTF8.self) }
        #expect(whole.hasSuffix(#""rows":["# + rows.joined(separator: ",") + "]}"))
        #expect(rows[1] == #"[2,"Barbara",1e999,null]"#)
        #expect(keyed.rows.map(\.key) == [Data("1".utf8), Data("2".utf8), Data("3".utf8)])
    }

    @Test func severalKeyColumnsGiveAnArrayKeyAndAnUnknownOneIsAnError() throws {
        let keyed = try result.keyedRows(key: ["name", "id"])
        #expect(keyed.rows[0].key == Data(#"["Arthur \"A\"",1]"#.utf8))
        #expect(throws: KeyedRowsError.unknownKeyColumn("rank")) { try result.keyedRows(key: ["rank"]) }
    }
}
