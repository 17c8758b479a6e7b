import AsyncHTTPClient
import Foundation
import NIOCore

/// One server-sent event, or a comment line.
public struct ServerSentEvent: Sendable, Equatable {
    public var event: String?
    public var data: String?
    public var id: String?
    public var comment: String?

    public var isComment: Bool { comment != nil }
}

/// A server-sent events stream read with AsyncHTTPClient over a real socket.
/// Belongs to one task. Shared by the tests of both server adapters.
public final class EventStreamClient {
    public let status: Int
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

    /// Opens `url`, sending `Last-Event-ID` when given and `headers`.
    public static func open(
        _ url: String, lastEventID: String? = nil, headers: [(String, String)] = [], client: HTTPClient = .shared
    ) async throws -> EventStreamClient {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "text/event-stream")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        // The server closes the connection after a stream: not one to reuse.
        request.headers.add(name: "Connection", value: "close")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        let response = try await client.execute(request, timeout: .seconds(3600))
        return EventStreamClient(response: response)
    }

    /// The rest of the body as text (for error answers).
    public func remainingBody() async throws -> String {
        while let chunk = try await iterator.next() { buffer.append(contentsOf: chunk.readableBytesView) }
        defer { buffer.removeAll() }
        return String(decoding: buffer, as: UTF8.self)
    }

    /// The next event; comments only when asked; nil at the end of the stream.
    public func next(includingComments: Bool = false) async throws -> ServerSentEvent? {
        while true {
            while let end = blockEnd() {
                let block = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                let event = Self.parse(block)
                if event.isComment && !includingComments { continue }
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

    public struct EndOfStream: Error {
        public init() {}
    }

    private func blockEnd() -> Int? {
        guard buffer.count >= 2 else { return nil }
        for index in 0..<(buffer.count - 1) where buffer[index] == 10 && buffer[index + 1] == 10 {
            return index
        }
        return nil
    }

    private static func parse(_ block: String) -> ServerSentEvent {
        var event = ServerSentEvent()
        for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(":") {
                event.comment = String(line.dropFirst()).trimmingCharacters(in: .whitespaces)
                continue
            }
            let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let field = String(parts[0])
            var value = parts.count > 1 ? String(parts[1]) : ""
            if value.hasPrefix(" ") { value.removeFirst() }
            switch field {
            case "event": event.event = value
            case "data": event.data = (event.data.map { $0 + "\n" } ?? "") + value
            case "id": event.id = value
            default: break
            }
        }
        return event
    }
}

extension ServerSentEvent {
    /// The `data:` decoded as JSON.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data((data ?? "").utf8))
    }

    /// The number before the dash of the `id:`.
    public var version: UInt64? {
        id.flatMap { $0.split(separator: "-").first }.flatMap { UInt64($0) }
    }
}

/// The JSON body of an error event or answer.
public struct ErrorJSON: Decodable, Equatable, Sendable {
    public var message: String
    public var code: Int32?

    public init(message: String, code: Int32? = nil) {
        self.message = message
        self.code = code
    }
}

/// Fetches `url` with `method`; returns the status, headers and body.
public func fetch(_ url: String, method: String = "GET") async throws -> (
    status: Int, headers: [String: String], body: String
) {
    var request = HTTPClientRequest(url: url)
    request.method = .init(rawValue: method)
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
    var headers: [String: String] = [:]
    for header in response.headers { headers[header.name.lowercased()] = header.value }
    let body = try await response.body.collect(upTo: 1 << 24)
    return (Int(response.status.code), headers, String(buffer: body))
}
