import AsyncHTTPClient
import Foundation

/// Reads a server-sent events stream over a real socket, one event at a
/// time. Belongs to one task.
final class EventReader {
    /// One event: its type (`message` unless named) and its data.
    struct Event: Equatable {
        var name = "message"
        var data = ""
    }

    let status: Int
    let contentType: String?
    private var chunks: HTTPClientResponse.Body.AsyncIterator
    private var text = ""

    /// Opens the stream at `url`.
    init(url: String, headers: [(String, String)] = []) async throws {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "text/event-stream")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.headers.add(name: "Connection", value: "close")  // a stream's connection is not reused
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(3600))
        status = Int(response.status.code)
        contentType = response.headers.first(name: "Content-Type")
        chunks = response.body.makeAsyncIterator()
    }

    /// The next event, skipping comments (keep-alives).
    func next() async throws -> Event {
        while true {
            while let end = text.range(of: "\n\n") {
                let block = text[..<end.lowerBound]
                text.removeSubrange(..<end.upperBound)
                var event = Event()
                var data: [Substring] = []
                for line in block.split(separator: "\n") {
                    if line.hasPrefix("event:") { event.name = line.dropFirst(6).trimmingCharacters(in: .whitespaces) }
                    if line.hasPrefix("data:") { data.append(line.dropFirst(5).drop { $0 == " " }) }
                }
                if data.isEmpty && event.name == "message" { continue }  // a comment or an id alone
                event.data = data.joined(separator: "\n")
                return event
            }
            guard let chunk = try await chunks.next() else { throw EndOfStream() }
            text += String(decoding: chunk.readableBytesView, as: UTF8.self)
        }
    }

    /// The stream ended.
    struct EndOfStream: Error {}
}
