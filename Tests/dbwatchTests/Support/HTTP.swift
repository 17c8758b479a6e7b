import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One server-sent event (comments are skipped).
struct ServerSentEvent: Sendable, Equatable {
    var event: String?
    var data: String?
    var id: String?

    /// `data:` as a JSON object.
    var json: [String: Any] {
        get throws {
            let object = try JSONSerialization.jsonObject(with: Data((data ?? "").utf8))
            guard let object = object as? [String: Any] else { throw HTTPTestError("not a JSON object: \(data ?? "")") }
            return object
        }
    }

    /// The rows of a `{"columns", "rows"}` value.
    var rows: [[Any]] {
        get throws { try json["rows"] as? [[Any]] ?? [] }
    }
}

/// A failed expectation about an answer.
struct HTTPTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A server-sent events stream read with AsyncHTTPClient over a real
/// socket, each read bounded by a deadline. Belongs to one task.
final class EventStream {
    let status: Int
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private var buffer: [UInt8] = []

    private init(response: HTTPClientResponse) {
        status = Int(response.status.code)
        iterator = response.body.makeAsyncIterator()
    }

    /// Opens `url`, sending `Last-Event-ID` when given and `headers`; the whole stream may last `seconds`.
    static func open(
        _ url: String, lastEventID: String? = nil, headers: [(String, String)] = [], seconds: Int64 = 60
    ) async throws -> EventStream {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "text/event-stream")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        request.headers.add(name: "Connection", value: "close")
        return EventStream(response: try await HTTPClient.shared.execute(request, timeout: .seconds(seconds)))
    }

    /// The rest of the body as text (for error answers).
    func remainingBody() async throws -> String {
        while let chunk = try await iterator.next() { buffer.append(contentsOf: chunk.readableBytesView) }
        defer { buffer.removeAll() }
        return String(decoding: buffer, as: UTF8.self)
    }

    /// The next event, or nil at the end of the stream.
    func next() async throws -> ServerSentEvent? {
        while true {
            if let end = blockEnd() {
                let block = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                if let event = Self.parse(block) { return event }
                continue
            }
            guard let chunk = try await iterator.next() else { return nil }
            buffer.append(contentsOf: chunk.readableBytesView)
        }
    }

    /// The next event, which must exist.
    func nextEvent() async throws -> ServerSentEvent {
        guard let event = try await next() else { throw HTTPTestError("the stream ended") }
        return event
    }

    private func blockEnd() -> Int? {
        guard buffer.count >= 2 else { return nil }
        return (0..<(buffer.count - 1)).first { buffer[$0] == 10 && buffer[$0 + 1] == 10 }
    }

    /// An event, or nil for a block of comments only.
    private static func parse(_ block: String) -> ServerSentEvent? {
        var event = ServerSentEvent()
        var hasField = false
        for line in block.split(separator: "\n") where !line.hasPrefix(":") {
            let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            var value = parts.count > 1 ? String(parts[1]) : ""
            if value.hasPrefix(" ") { value.removeFirst() }
            hasField = true
            switch parts[0] {
            case "event": event.event = value
            case "data": event.data = (event.data.map { $0 + "\n" } ?? "") + value
            case "id": event.id = value
            default: break
            }
        }
        return hasField ? event : nil
    }
}

/// Fetches `url`; returns the status, the content type and the body.
func fetch(_ url: String, method: HTTPMethod = .GET) async throws -> (status: Int, contentType: String?, body: String) {
    var request = HTTPClientRequest(url: url)
    request.method = method
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
    let body = try await response.body.collect(upTo: 1 << 24)
    return (Int(response.status.code), response.headers.first(name: "content-type"), String(buffer: body))
}

/// A JSON body as an object.
func jsonObject(_ body: String) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else {
        throw HTTPTestError("not a JSON object: \(body)")
    }
    return object
}
