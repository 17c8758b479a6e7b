import Foundation

extension KeyedChanges {
    /// Reads changes written by ``encodedJSON()`` (or by another server of
    /// the protocol): keys and rows keep the bytes they have in `json`,
    /// whitespace around them aside. A missing `delete` or `upsert` is
    /// empty; members of other names are skipped.
    ///
    /// ```swift
    /// let changes = try KeyedChanges(json: Data(#"{"delete":[3],"upsert":[{"key":7,"index":0}]}"#.utf8))
    /// changes.upserts[0].index   // 0
    /// ```
    ///
    /// - Parameter json: UTF-8 JSON text of one object.
    /// - Throws: ``KeyedRowsError/invalidJSON(at:_:)`` when `json` is not
    ///   valid JSON of that shape (an upsert without a key, an index that
    ///   is not a non-negative integer, ...).
    public init(json: Data) throws(KeyedRowsError) {
        var scanner = RawJSONScanner(Array(json))
        var deletes: [Data] = []
        var upserts: [Upsert] = []
        try scanner.object { (name, scanner) throws(KeyedRowsError) in
            switch name {
            case "delete":
                try scanner.array { (scanner) throws(KeyedRowsError) in
                    deletes.append(try scanner.rawValue())
                }
            case "upsert":
                try scanner.array { (scanner) throws(KeyedRowsError) in
                    upserts.append(try Self.upsert(&scanner))
                }
            default:
                _ = try scanner.value()
            }
        }
        try scanner.expectEnd()
        self.init(deletes: deletes, upserts: upserts)
    }

    /// Reads one upsert object.
    private static func upsert(_ scanner: inout RawJSONScanner) throws(KeyedRowsError) -> Upsert {
        scanner.skipWhitespace()
        let start = scanner.offset
        var key: Data?
        var index: Int?
        var row: Data?
        try scanner.object { (name, scanner) throws(KeyedRowsError) in
            switch name {
            case "key": key = try scanner.rawValue()
            case "index": index = try scanner.index()
            case "row": row = try scanner.rawValue()
            default: _ = try scanner.value()
            }
        }
        guard let key else { throw .invalidJSON(at: start, "an upsert without a key") }
        return Upsert(key: key, index: index, row: row)
    }
}
