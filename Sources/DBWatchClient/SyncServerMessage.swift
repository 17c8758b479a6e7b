import DBWatchDelivery
import Foundation

/// A message of the server (see the reference, "The Sync Protocol"), read
/// from its JSON with keys and rows kept as the bytes they were sent as.
enum SyncServerMessage: Sendable {
    case hello(protocol: Int?, session: String, position: String?)
    case batch(position: String, entries: [(id: String, entry: SyncEntry)])
    /// An error; with `id`, of a subscription: with a `position`, its fetch
    /// failed (it stays), without one, it was refused.
    case error(id: String?, position: String?, SyncClientError)
    case end(reason: String?)
    /// A type this client does not know: ignored.
    case other

    /// Reads a message; `event` is the server-sent event's name, the type
    /// when the JSON has none.
    init(event: String?, json: [UInt8]) throws(KeyedRowsError) {
        var scanner = RawJSONScanner(json)
        var type = event
        var protocolVersion: Int?
        var session: String?
        var position: String?
        var id: String?
        var entries: [(id: String, entry: SyncEntry)] = []
        var error: Data?
        var reason: String?
        try scanner.object { (name, scanner) throws(KeyedRowsError) in
            switch name {
            case "type": type = try scanner.string()
            case "protocol": protocolVersion = try scanner.index()
            case "session": session = try scanner.string()
            case "position": position = try scanner.optionalString()
            case "id": id = try scanner.optionalString()
            case "reason": reason = try scanner.optionalString()
            case "error": error = try scanner.rawValue()
            case "changes":
                try scanner.object { (id, scanner) throws(KeyedRowsError) in
                    entries.append((id, try SyncEntry(json: Array(try scanner.rawValue()))))
                }
            default: _ = try scanner.value()
            }
        }
        try scanner.expectEnd()
        switch type {
        case "hello":
            guard let session else { throw .invalidJSON(at: 0, "a hello without a session") }
            self = .hello(protocol: protocolVersion, session: session, position: position)
        case "batch":
            guard let position else { throw .invalidJSON(at: 0, "a batch without a position") }
            self = .batch(position: position, entries: entries)
        case "error":
            let kind: SyncClientError.Kind = id != nil && position != nil ? .queryFailed : .refused
            self = .error(id: id, position: position, Self.error(kind: kind, body: error, status: nil))
        case "end":
            self = .end(reason: reason)
        default:
            self = .other
        }
    }

    /// The error of the one error body, `{"message","code"?,"reason"?}`.
    static func error(kind: SyncClientError.Kind, body: Data?, status: Int?) -> SyncClientError {
        let fields = body.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] } ?? [:]
        let message = fields["message"] as? String ?? status.map { "HTTP \($0)" } ?? "the server's error"
        return SyncClientError(
            kind: kind, message: message, reason: fields["reason"] as? String, code: fields["code"] as? Int,
            status: status ?? fields["status"] as? Int)
    }
}

/// One subscription's entry of a batch.
enum SyncEntry: Sendable {
    case snapshot(reason: String?, columns: [String]?, rows: [KeyedRow])
    case changes([KeyedChanges])
    case value(Data)
    case unknown(String?)

    init(json: [UInt8]) throws(KeyedRowsError) {
        var scanner = RawJSONScanner(json)
        var kind: String?
        var reason: String?
        var columns: [String]?
        var rows: [KeyedRow]?
        var steps: [KeyedChanges]?
        var value: Data?
        try scanner.object { (name, scanner) throws(KeyedRowsError) in
            switch name {
            case "kind": kind = try scanner.string()
            case "reason": reason = try scanner.optionalString()
            case "columns":
                var names: [String] = []
                try scanner.array { (scanner) throws(KeyedRowsError) in names.append(try scanner.string()) }
                columns = names
            case "rows":
                var read: [KeyedRow] = []
                try scanner.array { (scanner) throws(KeyedRowsError) in read.append(try Self.row(&scanner)) }
                rows = read
            case "steps":
                var read: [KeyedChanges] = []
                try scanner.array { (scanner) throws(KeyedRowsError) in
                    read.append(try KeyedChanges(json: try scanner.rawValue()))
                }
                steps = read
            case "value": value = try scanner.rawValue()
            default: _ = try scanner.value()
            }
        }
        try scanner.expectEnd()
        switch kind {
        case "snapshot":
            guard let rows else { throw .invalidJSON(at: 0, "a snapshot without rows") }
            self = .snapshot(reason: reason, columns: columns, rows: rows)
        case "changes":
            self = .changes([try KeyedChanges(json: Data(json))])
        case "catchUp":
            guard let steps else { throw .invalidJSON(at: 0, "a catchUp without steps") }
            self = .changes(steps)
        case "value":
            guard let value else { throw .invalidJSON(at: 0, "a value entry without a value") }
            self = .value(value)
        default:
            self = .unknown(kind)
        }
    }

    /// `{"key": K, "row": R}`.
    private static func row(_ scanner: inout RawJSONScanner) throws(KeyedRowsError) -> KeyedRow {
        var key: Data?
        var row: Data?
        try scanner.object { (name, scanner) throws(KeyedRowsError) in
            switch name {
            case "key": key = try scanner.rawValue()
            case "row": row = try scanner.rawValue()
            default: _ = try scanner.value()
            }
        }
        guard let key, let row else { throw scanner.error("a snapshot row without a key or a row") }
        return KeyedRow(key: key, row: row)
    }
}

extension RawJSONScanner {
    /// A string, or `nil` for `null`.
    mutating func optionalString() throws(KeyedRowsError) -> String? {
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "n") {
            _ = try value()
            return nil
        }
        return try string()
    }
}
