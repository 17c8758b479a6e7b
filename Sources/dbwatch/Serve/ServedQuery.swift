import ArgumentParser
import DBWatch
import DBWatchHummingbird

/// One `--query name=SQL` of `serve`: its name in URLs, its SQL, the names
/// of its parameters (given in the query string) and what it observes.
///
/// ```swift
/// let query = try ServedQuery.parse("top=SELECT name FROM player LIMIT :n")
/// query.name   // "top"
/// ```
struct ServedQuery: Sendable {
    /// The name in `/queries/NAME`: letters, digits, `-` and `_`.
    let name: String
    /// The SQL, one statement.
    let sql: String
    /// The parameters as the SQL writes them (`:n`, `@n`, `$n`), in order.
    var parameters: [String] = []
    /// What a fetch reads, from `explain` at start.
    var region = DatabaseRegion()
    /// The columns that identify a row (a table's primary key or rowid),
    /// from the fetch at start: the page matches rows by them, as `watch`
    /// does to highlight changed cells. `nil` when the result has none.
    var key: [String]?
    /// The types and ranges `--param` declares, by parameter name (without
    /// its prefix); a parameter without one is typed as `--arg` types it.
    var bounds: [String: ParameterBound] = [:]

    /// Parses `--query`'s value, `name=SQL`.
    static func parse(_ argument: String) throws -> ServedQuery {
        guard let equals = argument.firstIndex(of: "=") else {
            throw ValidationError("--query \(CellText.sanitized(argument)): write it name=SQL.")
        }
        let name = String(argument[..<equals])
        let sql = String(argument[argument.index(after: equals)...])
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else {
            throw ValidationError(
                "--query \(CellText.sanitized(name)): a name holds only letters, digits, - and _ (it is part of URLs).")
        }
        if sql.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw ValidationError("--query \(name): the SQL is empty.")
        }
        return ServedQuery(name: name, sql: sql)
    }

    /// The parameters of a URL's query string (`a=1&b=x+y`), decoded as a
    /// browser's form (and `URLSearchParams`) encodes them: `+` is a space,
    /// `%XX` a byte, in keys as in values, the bytes UTF-8; empty segments
    /// (`?&a=1&&b=2&`) are nothing, and `a` alone is `a=`. A `%` not
    /// followed by two hex digits, or bytes that are not UTF-8, are a
    /// ``LiveQueriesError/badRequest(_:)``.
    ///
    /// ```swift
    /// try ServedQuery.queryParameters("n=Bob+Smith&m=%C3%A9")   // [("n", "Bob Smith"), ("m", "é")]
    /// ```
    static func queryParameters(_ query: String?) throws -> [(key: Substring, value: Substring)] {
        guard let query else { return [] }
        return try query.split(separator: "&").map { part in
            let pair = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = formDecoded(pair[0]), let value = pair.count > 1 ? formDecoded(pair[1]) : "" else {
                throw LiveQueriesError.badRequest(
                    "the query string is not percent-encoded UTF-8: \(CellText.sanitized(String(part.prefix(200))))")
            }
            return (key: key[...], value: value[...])
        }
    }

    /// `text` with `+` as a space and `%XX` as a byte, if that makes UTF-8.
    private static func formDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexDigit), let low = iterator.next().flatMap(hexDigit) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A parameter's name in a query string: without its prefix.
    static func bareName(_ parameter: String) -> String { String(parameter.dropFirst()) }

    /// The observed request for the values of a query string, typed as
    /// `--arg` types them. A missing, unknown or repeated parameter is a
    /// ``LiveQueriesError/badRequest(_:)``; the parameters in `bound` (a
    /// JWT's claims) are not the query string's.
    func request(
        queryString: some Sequence<(key: Substring, value: Substring)>, limits: QueryLimits,
        bound: [String: DatabaseValue] = [:]
    ) throws -> WatchedQuery {
        var values = bound
        let names = Set(parameters.map(Self.bareName)).subtracting(bound.keys)
        for (key, value) in queryString {
            let key = String(key)
            guard names.contains(key) else {
                throw LiveQueriesError.badRequest(
                    names.isEmpty
                        ? "query \(name) takes no parameter; unknown parameter \(key)"
                        : "unknown parameter \(key) for query \(name), which takes \(Self.list(names))")
            }
            guard values[key] == nil else { throw LiveQueriesError.badRequest("parameter \(key) is given twice") }
            if let bound = bounds[key] {
                values[key] = try bound.value(from: String(value))
                continue
            }
            guard let argument = SQLArgument(argument: String(value)) else {
                throw LiveQueriesError.badRequest(
                    "parameter \(key): the integer is beyond the 64-bit range; "
                        + "write it with a decimal point for a REAL, or in single quotes for TEXT")
            }
            values[key] = argument.value
        }
        let missing = names.subtracting(values.keys)
        if !missing.isEmpty {
            throw LiveQueriesError.badRequest(
                "query \(name) needs the parameter\(missing.count == 1 ? "" : "s") \(Self.list(missing))")
        }
        return limits.query(sql, arguments: StatementArguments(values))
    }

    /// The request run at start: every parameter bound to 0, a value most
    /// SQL accepts (`LIMIT 0`, `score > 0`), or the value nearest 0 within
    /// its `--param` bound.
    func startRequest(limits: QueryLimits) -> WatchedQuery {
        var values: [String: DatabaseValue] = [:]
        for parameter in parameters {
            let name = Self.bareName(parameter)
            values[name] = bounds[name]?.sampleValue ?? .integer(0)
        }
        return limits.query(sql, arguments: StatementArguments(values))
    }

    private static func list(_ names: Set<String>) -> String {
        names.sorted().joined(separator: ", ")
    }

    /// The entry of `GET /queries`: name, SQL, parameters, the tables and
    /// columns observed (`"*"` for every column, `[]` for inserts and
    /// deletes only), as `explain` says, and the key columns or `null`.
    var json: JSON {
        let observes = region.tables.keys.sorted().map { table -> JSON.Member in
            let columns: JSON
            switch region.tables[table]! {
            case .all: columns = .string("*")
            case .columns(let names): columns = .array(names.sorted().map(JSON.string))
            }
            return JSON.Member(key: "\(table)", value: columns)
        }
        return .object([
            "name": .string(name), "sql": .string(sql),
            "parameters": .array(queryStringParameters.map(JSON.string)),
            "claims": .array(claimNames.map(JSON.string)),
            "observes": .object(observes),
            "key": key.map { .array($0.map(JSON.string)) } ?? .null,
            "bounds": .object(
                bounds.keys.sorted().map { JSON.Member(key: $0, value: .string(bounds[$0]!.description)) }),
        ])
    }
}

extension StatementArguments {
    /// Named arguments from database values.
    init(_ values: [String: DatabaseValue]) {
        self.init(values.mapValues { $0 as (any DatabaseValueConvertible)? })
    }
}
