import DBWatch
import DBWatchDelivery
import Foundation
import Testing

/// Building keyed rows: keys must be unique, and the two sources of rows
/// (identifiable elements, columns of cells) give the expected bytes.
@Suite("Keyed rows: keys and rows")
struct KeyedRowsTests {
    struct Item: Identifiable, Encodable {
        var id: String
        var title: String
        var done: Bool
    }

    struct Items: Queryable {
        static var defaultValue: [Item] { [] }
        func fetch(_ db: Database) throws -> [Item] { [] }
    }

    @Test func duplicateKeysAreRefusedWithTheTypedError() {
        #expect(throws: KeyedRowsError.duplicateKey(json("1"))) {
            try KeyedRows([KeyedRow(key: json("1"), row: json("[1]")), KeyedRow(key: json("1"), row: json("[2]"))])
        }
        #expect(throws: KeyedRowsError.duplicateKey(json(#""a""#))) {
            try KeyedRows(identifying: [Item(id: "a", title: "x", done: false), Item(id: "a", title: "y", done: true)])
        }
        // A join whose declared key is not unique.
        #expect(throws: KeyedRowsError.duplicateKey(json("[1,2]"))) {
            try KeyedRows(
                columns: ["a", "b", "c"],
                rows: [[json("1"), json("2"), json("3")], [json("1"), json("2"), json("4")]], key: ["a", "b"])
        }
    }

    @Test func identifiableElementsAreKeyedByTheJSONOfTheirIdWithRowsInSortedKeys() throws {
        let items = [Item(id: "b", title: "Buy milk", done: false), Item(id: "a", title: "Call", done: true)]
        let rows = try Items.keyedRows(of: items)
        #expect(rows.rows.map(\.key) == [json(#""b""#), json(#""a""#)])
        #expect(rows.rows[0].row == json(#"{"done":false,"id":"b","title":"Buy milk"}"#))
        #expect(rows.row(forKey: json(#""a""#)) == json(#"{"done":true,"id":"a","title":"Call"}"#))
        #expect(rows.row(forKey: json(#""c""#)) == nil)
        #expect(rows.count == 2)
    }

    @Test func columnsGiveRowsAsArraysOfTheirCellsAndKeysAsOneCellOrAnArray() throws {
        let cells = [[json("1"), json("0.10"), json(#""x""#)], [json("2"), json("1e999"), json("null")]]
        let single = try KeyedRows(columns: ["id", "score", "name"], rows: cells, key: ["id"])
        #expect(single.rows.map(\.key) == [json("1"), json("2")])
        #expect(single.rows.map(\.row) == [json(#"[1,0.10,"x"]"#), json("[2,1e999,null]")])
        let composite = try KeyedRows(columns: ["id", "score", "name"], rows: cells, key: ["name", "id"])
        #expect(composite.rows.map(\.key) == [json(#"["x",1]"#), json("[null,2]")])
        #expect(throws: KeyedRowsError.unknownKeyColumn("rank")) {
            try KeyedRows(columns: ["id"], rows: [], key: ["rank"])
        }
    }
}
