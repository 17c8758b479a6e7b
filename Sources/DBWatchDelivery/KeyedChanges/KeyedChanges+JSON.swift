import Foundation

extension KeyedChanges {
    /// The changes as JSON, byte for byte the same for equal changes:
    /// `{"delete":[K,…],"upsert":[{"key":K,"index":I,"row":R},…]}`, keys
    /// and rows inserted as their bytes are, `index` and `row` left out
    /// when `nil`, no whitespace.
    ///
    /// ```swift
    /// KeyedChanges(deletes: [Data("3".utf8)], upserts: [.init(key: Data("7".utf8), index: 0)]).encodedJSON()
    /// // {"delete":[3],"upsert":[{"key":7,"index":0}]}
    /// ```
    ///
    /// - Returns: The UTF-8 JSON text.
    public func encodedJSON() -> Data {
        var size = 24 + deletes.reduce(0) { $0 + $1.count + 1 }
        for upsert in upserts {
            size += 40 + upsert.key.count + (upsert.row?.count ?? 0)
        }
        var json: [UInt8] = []
        json.reserveCapacity(size)
        json.append(contentsOf: #"{"delete":["#.utf8)
        for (position, key) in deletes.enumerated() {
            if position > 0 { json.append(UInt8(ascii: ",")) }
            json.append(contentsOf: key)
        }
        json.append(contentsOf: #"],"upsert":["#.utf8)
        for (position, upsert) in upserts.enumerated() {
            if position > 0 { json.append(UInt8(ascii: ",")) }
            json.append(contentsOf: #"{"key":"#.utf8)
            json.append(contentsOf: upsert.key)
            if let index = upsert.index {
                json.append(contentsOf: #","index":"#.utf8)
                json.append(contentsOf: String(index).utf8)
            }
            if let row = upsert.row {
                json.append(contentsOf: #","row":"#.utf8)
                json.append(contentsOf: row)
            }
            json.append(UInt8(ascii: "}"))
        }
        json.append(contentsOf: "]}".utf8)
        return Data(json)
    }
}
