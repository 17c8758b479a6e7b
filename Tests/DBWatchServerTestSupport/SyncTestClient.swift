import AsyncHTTPClient
import DBWatchDelivery
import DBWatchTestSupport
import Foundation

/// A message of the sync protocol as a test reads it: its type (the
/// event's name) and its JSON object.
public struct SyncMessage: @unchecked Sendable {  // `fields` holds JSONSerialization's immutable values
    public let type: String
    public let fields: [String: Any]

    public init(type: String, fields: [String: Any]) {
        self.type = type
        self.fields = fields
    }

    public subscript(_ name: String) -> Any? { fields[name] }

    /// A batch's entries by subscription id.
    public var changes: [String: [String: Any]] { fields["changes"] as? [String: [String: Any]] ?? [:] }

    /// The position of a batch, `hello` or error.
    public var position: String? { fields["position"] as? String }

    /// The sequence of ``position``.
    public var sequence: UInt64? { position.flatMap { $0.split(separator: "/").last.flatMap { UInt64($0) } } }
}

/// A client of the sync protocol over server-sent events, with the POSTs
/// beside the stream, for tests: the raw protocol, no client library.
public final class SyncTestClient {
    public let stream: EventStream
    /// The session id and position of `hello`.
    public let session: String
    public let helloPosition: String
    private let baseURL: String
    private let headers: [(String, String)]

    private init(stream: EventStream, session: String, position: String, baseURL: String, headers: [(String, String)]) {
        self.stream = stream
        self.session = session
        self.helloPosition = position
        self.baseURL = baseURL
        self.headers = headers
    }

    /// Opens `GET baseURL/sync` and reads `hello`; with its own `client`,
    /// whose shutdown ends the connection.
    public static func connect(
        _ baseURL: String, headers: [(String, String)] = [], client: HTTPClient = .shared
    ) async throws -> SyncTestClient {
        let stream = try await EventStream.open("\(baseURL)/sync", headers: headers, client: client)
        guard stream.status == 200 else {
            throw EventStream.Failure("GET /sync answered \(stream.status): \(try await stream.remainingBody())")
        }
        let hello = try await Self.message(stream.nextEvent())
        guard hello.type == "hello", let session = hello["session"] as? String, let position = hello.position,
            hello["protocol"] as? Int == 1
        else { throw EventStream.Failure("the first message is not hello: \(hello.fields)") }
        return SyncTestClient(stream: stream, session: session, position: position, baseURL: baseURL, headers: headers)
    }

    /// Posts one message for this session, with the connection's headers
    /// or `headers` (another token); returns the answer.
    @discardableResult
    public func send(
        _ message: [String: Any], headers: [(String, String)]? = nil
    ) async throws -> (status: Int, body: String) {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: message), as: UTF8.self)
        let answer = try await fetch(
            "\(baseURL)/sync/\(session)", method: "POST", body: json, headers: headers ?? self.headers)
        return (answer.status, answer.body)
    }

    /// Subscribes `id`; returns the POST's status.
    @discardableResult
    public func subscribe(
        _ id: String, to query: String, params: [String: String] = [:], mode: String? = nil, position: String? = nil
    ) async throws -> Int {
        var message: [String: Any] = ["type": "subscribe", "id": id, "query": query, "params": params]
        if let mode { message["mode"] = mode }
        if let position { message["position"] = position }
        return try await send(message).status
    }

    /// Subscribes to the test server's `top` (keyed) and `count` (whole
    /// values) under their own names, and reads batches until both have
    /// their first value (one batch or two, whichever the fetches allow).
    public func subscribeToTopAndCount() async throws -> SyncResults {
        try await subscribe("top", to: "top")
        try await subscribe("count", to: "count")
        var results = SyncResults()
        while results.results["top"] == nil || results.values["count"] == nil {
            try results.apply(try await next())
        }
        return results
    }

    /// The next message.
    public func next() async throws -> SyncMessage {
        try Self.message(try await stream.nextEvent())
    }

    static func message(_ event: ServerSentEvent) throws -> SyncMessage {
        guard let type = event.event, let data = event.data,
            let fields = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]
        else { throw EventStream.Failure("not a sync message: \(event)") }
        return SyncMessage(type: type, fields: fields)
    }
}

/// What a client holds of its subscriptions: each result as keyed rows,
/// with batches applied as the reference says (snapshots, changes,
/// catch-ups through `KeyedRows.applying`).
public struct SyncResults {
    public private(set) var results: [String: KeyedRows] = [:]
    /// Whole values (`"kind": "value"`) by subscription id.
    public private(set) var values: [String: Any] = [:]

    public init() {}

    /// Applies every entry of `batch`.
    public mutating func apply(_ batch: SyncMessage) throws {
        for (id, entry) in batch.changes {
            switch entry["kind"] as? String {
            case "snapshot":
                let rows = (entry["rows"] as? [[String: Any]] ?? []).map { row in
                    KeyedRow(key: Self.json(row["key"]!), row: Self.json(row["row"]!))
                }
                results[id] = try KeyedRows(rows)
            case "changes":
                results[id] = try held(id).applying(KeyedChanges(json: Self.json(entry)))
            case "catchUp":
                for step in entry["steps"] as? [[String: Any]] ?? [] {
                    results[id] = try held(id).applying(KeyedChanges(json: Self.json(step)))
                }
            case "value":
                values[id] = entry["value"]
            default:
                throw EventStream.Failure("unknown entry \(entry)")
            }
        }
    }

    private func held(_ id: String) throws -> KeyedRows {
        guard let rows = results[id] else { throw EventStream.Failure("changes for \(id), which holds nothing") }
        return rows
    }

    /// The rows of `id`'s result, decoded.
    public func rows<Row: Decodable>(_ id: String, as type: Row.Type) throws -> [Row] {
        try (results[id]?.rows ?? []).map { try JSONDecoder().decode(Row.self, from: $0.row) }
    }

    static func json(_ value: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])) ?? Data()
    }
}

/// An answer to the catch-up over plain HTTP (`GET /sync/queries/NAME?PARAMS&since=POSITION`):
/// its status, headers and bytes, and its fields when it is a 200.
public struct CatchUpAnswer: Sendable {
    public let status: Int
    /// Header fields by lowercased name.
    public let headers: [String: String]
    public let body: String

    /// The request that gives it: the query, its parameters and `since`.
    public static func fetch(
        _ baseURL: String, query: String, params: [String: String] = [:], since: String?,
        headers: [(String, String)] = []
    ) async throws -> CatchUpAnswer {
        var items = params.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        if let since { items.append(URLQueryItem(name: "since", value: since)) }
        var components = URLComponents()
        components.queryItems = items
        let answer = try await DBWatchServerTestSupport.fetch(
            "\(baseURL)/sync/queries/\(query)\(items.isEmpty ? "" : "?" + (components.percentEncodedQuery ?? ""))",
            headers: headers)
        return CatchUpAnswer(status: answer.status, headers: answer.headers, body: answer.body)
    }

    private var object: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
    }

    /// `position`: where the client stands once it applied the steps.
    public var position: String? { object["position"] as? String }
    /// `complete`: the answer never changes.
    public var complete: Bool? { object["complete"] as? Bool }
    /// The error's `reason`.
    public var reason: String? { object["reason"] as? String }
    /// The number of steps.
    public var stepCount: Int { (object["steps"] as? [Any])?.count ?? -1 }

    /// `rows` with every step applied, in order.
    public func applied(to rows: KeyedRows) throws -> KeyedRows {
        var rows = rows
        for step in object["steps"] as? [[String: Any]] ?? [] {
            rows = try rows.applying(KeyedChanges(json: SyncResults.json(step)))
        }
        return rows
    }
}
