import DBWatchDelivery
import Foundation
import Testing

/// The change rule on small results written as words (`"a1 b1"`: keys a
/// and b, version 1): what `between` emits, and that `applying` it to the
/// old result gives the new one.
@Suite("Keyed changes: the rule, case by case")
struct KeyedChangesRuleTests {
    /// The changes from `old` to `new` as text: deletes, then upserts.
    func changes(_ old: String, _ new: String) throws -> (deletes: [String], upserts: [String]) {
        let changes = try checkedChanges(.words(old), .words(new))
        return (changes.deletedText, changes.upserts.map(\.text))
    }

    @Test func equalResultsGiveEmptyChanges() throws {
        let changes = try checkedChanges(.words("a1 b1 c1"), .words("a1 b1 c1"))
        #expect(changes.isEmpty)
        #expect(String(decoding: changes.encodedJSON(), as: UTF8.self) == #"{"delete":[],"upsert":[]}"#)
        #expect(try checkedChanges(.words(""), .words("")).isEmpty)
    }

    @Test func insertsAtTheStartTheMiddleAndTheEndCarryTheirIndexAndRow() throws {
        #expect(try changes("b1 c1", "a1 b1 c1") == ([], [#"a@0=["a",1]"#]))
        #expect(try changes("a1 c1", "a1 b1 c1") == ([], [#"b@1=["b",1]"#]))
        #expect(try changes("a1 b1", "a1 b1 c1") == ([], [#"c@2=["c",1]"#]))
        #expect(try changes("b1 d1", "a1 b1 c1 d1 e1") == ([], [#"a@0=["a",1]"#, #"c@2=["c",1]"#, #"e@4=["e",1]"#]))
    }

    @Test func deletesNameTheirKeysInTheOldOrder() throws {
        #expect(try changes("a1 b1 c1 d1", "b1 d1") == (["a", "c"], []))
        #expect(try changes("a1 b1 c1", "a1 b1") == (["c"], []))
    }

    @Test func aChangedRowThatKeepsItsPlaceIsUpdatedInPlace() throws {
        #expect(try changes("a1 b1 c1", "a1 b2 c1") == ([], [#"b=["b",2]"#]))
        #expect(try changes("a1 b1 c1", "a2 b1 c3") == ([], [#"a=["a",2]"#, #"c=["c",3]"#]))
    }

    @Test func aRowMovedUpOrDownIsOneUpsertWithItsNewIndexAndNoRow() throws {
        #expect(try changes("a1 b1 c1 d1", "a1 d1 b1 c1") == ([], ["d@1"]))
        #expect(try changes("a1 b1 c1 d1", "b1 c1 a1 d1") == ([], ["a@2"]))
        #expect(try changes("a1 b1 c1 d1", "d1 a1 b1 c1") == ([], ["d@0"]))
        #expect(try changes("a1 b1 c1 d1", "b1 c1 d1 a1") == ([], ["a@3"]))
    }

    @Test func aRowMovedAndChangedCarriesItsIndexAndRow() throws {
        #expect(try changes("a1 b1 c1 d1", "d2 a1 b1 c1") == ([], [#"d@0=["d",2]"#]))
    }

    @Test func aSwapMovesOneRow() throws {
        let changes = try checkedChanges(.words("a1 b1 c1 d1"), .words("a1 c1 b1 d1"))
        #expect(changes.deletes.isEmpty)
        #expect(changes.upserts.count == 1)
        #expect(changes.upserts.allSatisfy { $0.index != nil && $0.row == nil })
    }

    @Test func aReversalOfNRowsMovesNMinusOne() throws {
        let letters = "abcdefghij".map(String.init)
        let changes = try checkedChanges(
            .words(letters.joined(separator: " ")), .words(letters.reversed().joined(separator: " ")))
        #expect(changes.deletes.isEmpty)
        #expect(changes.upserts.count == letters.count - 1)
        #expect(changes.upserts.map { $0.index! } == changes.upserts.map { $0.index! }.sorted())
    }

    @Test func everythingReplacedDeletesAllAndInsertsAll() throws {
        #expect(try changes("a1 b1", "c1 d1") == (["a", "b"], [#"c@0=["c",1]"#, #"d@1=["d",1]"#]))
    }

    @Test func fromEmptyEverythingIsInsertedAndToEmptyEverythingIsDeleted() throws {
        #expect(try changes("", "a1 b1") == ([], [#"a@0=["a",1]"#, #"b@1=["b",1]"#]))
        #expect(try changes("a1 b1", "") == (["a", "b"], []))
    }

    @Test func upsertsWithAnIndexAreSortedByIndexAndInPlaceOnesAmongThemInTheNewOrder() throws {
        #expect(
            try changes("a1 b1 c1 d1 e1", "e1 a2 b1 x1 c1 d2")
                == ([], ["e@0", #"a=["a",2]"#, #"x@3=["x",1]"#, #"d=["d",2]"#]))
    }

    @Test func aPureMoveWithoutARowKeepsTheRowItHad() throws {
        let old = KeyedRows.words("a1 b1 c1")
        let move = KeyedChanges(upserts: [.init(key: json(#""c""#), index: 0)])
        #expect(try old.applying(move).words == "c1 a1 b1")
    }

    @Test func upsertsWithAnIndexAreInsertedInAscendingIndexOrderWhateverTheirOrderInTheChanges() throws {
        let old = KeyedRows.words("a1 b1 c1")
        let changes = KeyedChanges(upserts: [
            .init(key: json(#""y""#), index: 4, row: json(#"["y",1]"#)),
            .init(key: json(#""x""#), index: 0, row: json(#"["x",1]"#)),
            .init(key: json(#""b""#), index: 2),
        ])
        #expect(try old.applying(changes).words == "x1 a1 b1 c1 y1")
    }

    @Test func changesThatDoNotFitTheResultAreTypedErrors() throws {
        let old = KeyedRows.words("a1 b1 c1")
        let a = json(#""a""#)
        let z = json(#""z""#)
        let row = json(#"["z",1]"#)
        let cases: [(KeyedChanges, KeyedRowsError)] = [
            (KeyedChanges(deletes: [z]), .unknownKey(z)),
            (KeyedChanges(upserts: [.init(key: z, row: row)]), .unknownKey(z)),
            (KeyedChanges(upserts: [.init(key: z, index: 0)]), .unknownKey(z)),
            (KeyedChanges(upserts: [.init(key: a)]), .missingRow(a)),
            (KeyedChanges(upserts: [.init(key: z, index: 4, row: row)]), .indexOutOfRange(4)),
            (KeyedChanges(upserts: [.init(key: z, index: -1, row: row)]), .indexOutOfRange(-1)),
            (KeyedChanges(deletes: [json(#""b""#)], upserts: [.init(key: a, index: 2)]), .indexOutOfRange(2)),
            (KeyedChanges(deletes: [a], upserts: [.init(key: a, row: row)]), .keyRepeated(a)),
            (KeyedChanges(deletes: [a, a]), .keyRepeated(a)),
            (KeyedChanges(upserts: [.init(key: a, index: 0), .init(key: a, index: 1)]), .keyRepeated(a)),
            (
                KeyedChanges(upserts: [.init(key: a, index: 1), .init(key: z, index: 1, row: row)]),
                .indexRepeated(1)
            ),
        ]
        for (changes, expected) in cases {
            #expect(throws: expected, "\(changes)") { try old.applying(changes) }
        }
    }
}
