import AsyncHTTPClient
import Foundation
import NIOCore

/// One server-sent event, or a block of comment lines.
public struct ServerSentEvent: Sendable, Equatable {
    /// The `event:` field.
    public var event: String?
    /// The `data:` lines, joined by newlines.
    public var data: String?
    /// The `id:` field.
    public var id: String?
    /// The last comment line (`: text`), without its colon.
    public var comment: String?

    /// An event with these fields.
    public init(event: String? = nil, data: String? = nil, id: String? = nil, comment: String? = nil) {
        self.event = event
        self.data = data
        self.id = id
        self.comment = comment
    }

    /// Whether the block held comments only (a keep-alive).
    public var isComment: Bool { comment != nil && event == nil && data == nil && id == nil }

    /// The `data:` decoded as JSON.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data((data ?? "").utf8))
    }

    /// The `data:` as a JSON object.
    public var json: [String: Any] {
        get throws {
            let object = try JSONSerialization.jsonObject(with: Data((data ?? "").utf8))
            guard let object = object as? [String: Any] else {
                throw EventStream.Failure("not a JSON object: \(data ?? "")")
            }
            return object
        }
    }

    /// The rows of a `{"columns", "rows"}` value.
    public var rows: [[Any]] {
        get throws { try json["rows"] as? [[Any]] ?? [] }
    }

    /// The number before the dash of the `id:`.
    public var version: UInt64? {
        id.flatMap { $0.split(separator: "-").first }.flatMap { UInt64($0) }
    }
}

/// The tests' server-sent events client: a stream read with
/// AsyncHTTPClient over a real socket. Belongs to one task.
///
/// ```swift
/// let stream = try await EventStream.open("http://127.0.0.1:\(port)/top/events?limit=3")
/// #expect(stream.status == 200)
/// let first = try await stream.nextEvent()          // comments (keep-alives) skipped
/// ```
public final class EventStream {
    /// An answer that is not what the test expects, or a stream that ended.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String

        /// A failure described by `description`.
        public init(_ description: String) { self.description = description }
    }

    /// The stream ended where an event had to come.
    public struct EndOfStream: Error {
        public init() {}
    }

    /// The answer's status code.
    public let status: Int
    /// The answer's header fields, names in lower case.
    public let headers: [String: String]
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private var buffer: [UInt8] = []

    private init(response: HTTPClientResponse) {
        status = Int(response.status.code)
        var headers: [String: String] = [:]
        for header in response.headers { headers[header.name.lowercased()] = header.value }
        self.headers = headers
        iterator = response.body.makeAsyncIterator()
    }

    /// Opens `url`, sending `Accept: text/event-stream`, `Last-Event-ID`
    /// when given, and `headers`; the whole stream may last `seconds` (the
    /// test's own timeout is the usual bound).
    public static func open(
        _ url: String, lastEventID: String? = nil, headers: [(String, String)] = [], seconds: Int64 = 3600,
        client: HTTPClient = .shared
    ) async throws -> EventStream {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "text/event-stream")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        // The server closes the connection after a stream: not one to reuse.
        request.headers.add(name: "Connection", value: "close")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        let response = try await client.execute(request, timeout: .seconds(seconds))
        return EventStream(response: response)
    }

    /// The rest of the body as text (for error answers).
    public func remainingBody() async throws -> String {
        while let chunk = try await iterator.next() { buffer.append(contentsOf: chunk.readableBytesView) }
        defer { buffer.removeAll() }
        return String(decoding: buffer, as: UTF8.self)
    }

    /// The next event; blocks of comments only when asked; nil at the end
    /// of the stream.
    public func next(includingComments: Bool = false) async throws -> ServerSentEvent? {
        while true {
            while let end = blockEnd() {
                let block = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                let event = Self.parse(block)
                if event.isComment && !includingComments { continue }
                if event == ServerSentEvent() { continue }
                return event
            }
            guard let chunk = try await iterator.next() else { return nil }
            buffer.append(contentsOf: chunk.readableBytesView)
        }
    }

    /// The next event that is not a comment, which must exist.
    public func nextEvent() async throws -> ServerSentEvent {
        guard let event = try await next() else { throw EndOfStream() }
        return event
    }

    private func blockEnd() -> Int? {
        guard buffer.count >= 2 else { return nil }
        return (0..<(buffer.count - 1)).first { buffer[$0] == 10 && buffer[$0 + 1] == 10 }
    }

    private static func parse(_ block: String) -> ServerSentEvent {
        var event = ServerSentEvent()
        for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(":") {
                event.comment = String(line.dropFirst()).trimmingCharacters(in: .whitespaces)
                continue
            }
            let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            var value = parts.count > 1 ? String(parts[1]) : ""
            if value.hasPrefix(" ") { value.removeFirst() }
            switch parts[0] {
            case "event": event.event = value
            case "data": event.data = (event.data.map { $0 + "\n" } ?? "") + value
            case "id": event.id = value
            default: break
            }
        }
        return event
    }
}
