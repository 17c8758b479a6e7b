import DBWatchDelivery
import Foundation
import Testing

/// The JSON bytes of `text`.
func json(_ text: String) -> Data { Data(text.utf8) }

extension KeyedRows {
    /// A result written as words, `"a1 b1 c2"`: each word is a key (its
    /// letters, a JSON string) and a version (its digits); the row is
    /// `["a",1]`, so a new version is a changed row.
    static func words(_ words: String) -> KeyedRows {
        try! KeyedRows(
            words.split(separator: " ").map { word in
                let key = word.prefix { $0.isLetter }
                let version = word.dropFirst(key.count)
                return KeyedRow(key: json("\"\(key)\""), row: json("[\"\(key)\",\(version.isEmpty ? "0" : version)]"))
            })
    }

    /// The result as words, the inverse of ``words(_:)``: `"a1 b1 c2"`.
    var words: String {
        rows.map { row in
            let text = String(decoding: row.row, as: UTF8.self).dropFirst(2).dropLast()
            return text.replacingOccurrences(of: "\",", with: "")
        }.joined(separator: " ")
    }
}

/// Computes the changes from `old` to `new`, and checks what every change
/// must satisfy: applying them to `old` gives `new`, and they survive their
/// JSON unchanged. Returns them for further checks.
@discardableResult
func checkedChanges(
    _ old: KeyedRows, _ new: KeyedRows, sourceLocation: SourceLocation = #_sourceLocation
) throws -> KeyedChanges {
    let changes = KeyedChanges.between(old, new)
    let decoded = try KeyedChanges(json: changes.encodedJSON())
    #expect(decoded == changes, "JSON round trip", sourceLocation: sourceLocation)
    #expect(try old.applying(decoded) == new, "applied", sourceLocation: sourceLocation)
    return changes
}

extension KeyedChanges.Upsert {
    /// The upsert as text: `d@1` (a move), `d@1=["d",2]` (a move or insert
    /// with a row), `d=["d",2]` (in place), the key's letters only.
    var text: String {
        let key = String(decoding: key, as: UTF8.self).filter { $0 != "\"" }
        let index = index.map { "@\($0)" } ?? ""
        let row = row.map { "=" + String(decoding: $0, as: UTF8.self) } ?? ""
        return key + index + row
    }
}

extension KeyedChanges {
    /// The deletes' keys as text, letters only.
    var deletedText: [String] {
        deletes.map { String(decoding: $0, as: UTF8.self).filter { $0 != "\"" } }
    }
}
