import DBWatch
import Foundation

extension QueryResult {
    /// A served value as `watch` prints a local one: `dbwatch serve`'s
    /// `{"columns": […], "rows": [[…], …]}` exactly (numbers written with a
    /// fraction or an exponent are reals, others integers; `{"base64"}` a
    /// blob), an array of objects (a `Queryable`'s `Encodable` elements) as
    /// one row each, and any other JSON as one `value` cell holding its
    /// text. `keyNames` (from `GET /queries`) become the key columns when
    /// the value has them all.
    ///
    /// ```swift
    /// let result = try QueryResult(servedJSON: Array(#"{"columns":["id"],"rows":[[1]]}"#.utf8), keyNames: ["id"])
    /// result.keyColumns   // [0]
    /// ```
    init(servedJSON bytes: [UInt8], keyNames: [String]?) throws {
        let json = try JSON.parse(bytes)
        let columns: [String]
        let rows: [[DatabaseValue]]
        if case .array(let names)? = json["columns"], case .array(let values)? = json["rows"] {
            columns = try names.map { name in
                guard case .string(let name) = name else { throw JSON.ParseError(offset: 0) }
                return name
            }
            rows = try values.map { row in
                guard case .array(let cells) = row, cells.count == names.count else {
                    throw JSON.ParseError(offset: 0)
                }
                return cells.map(DatabaseValue.init(servedJSON:))
            }
        } else if case .array(let elements) = json, !elements.isEmpty,
            elements.allSatisfy({ if case .object = $0 { true } else { false } })
        {
            var names: [String] = []
            for case .object(let members) in elements {
                for member in members where !names.contains(member.key) { names.append(member.key) }
            }
            columns = names
            rows = elements.map { element in names.map { element[$0].map(DatabaseValue.init(servedJSON:)) ?? .null } }
        } else {
            columns = ["value"]
            rows = [[DatabaseValue(servedJSON: json)]]
        }
        let keyColumns = keyNames.flatMap { keyNames -> [Int]? in
            let positions = keyNames.compactMap { columns.firstIndex(of: $0) }
            return positions.count == keyNames.count ? positions : nil
        }
        self.init(columns: columns, rows: rows, keyColumns: keyColumns)
    }
}

extension DatabaseValue {
    /// The database value a served JSON value stands for (the inverse of
    /// `JSON.init(_: DatabaseValue)`): a JSON array or object that is not a
    /// blob is kept as its JSON text.
    init(servedJSON json: JSON) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .integer(value ? 1 : 0)
        case .number(let text):
            if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let integer = Int64(text) {
                self = .integer(integer)
            } else {
                self = .real(Double(text) ?? .nan)
            }
        case .string(let text): self = .text(text)
        case .object(let members) where members.count == 1:
            if case .string(let base64) = members[0].value, let data = Data(base64Encoded: base64) {
                switch members[0].key {
                case "base64":
                    self = .blob(data)
                    return
                case "text_base64":
                    self = .invalidUTF8Text(data)
                    return
                default: break
                }
            }
            self = .text(json.rendered())
        case .array, .object: self = .text(json.rendered())
        }
    }
}
