import BenchProcess
import NIOCore
import NIOHTTP1

/// One server-sent event: its name (`event:`, empty when it has none, as
/// whole values have) and its `data:` line.
struct ServerEvent {
    var name: ArraySlice<UInt8>
    var data: ArraySlice<UInt8>
}

/// Hears the events of many clients, on their event loops.
protocol EventStreamListener: Sendable {
    /// A complete event of `client`, whose last bytes arrived at `time`
    /// (`CLOCK_MONOTONIC` nanoseconds, taken before parsing).
    func received(_ event: ServerEvent, client: Int, at time: UInt64)
    /// The answer was not 200 (`status`), or the stream ended (`nil`).
    func ended(client: Int, status: HTTPResponseStatus?)
}

/// One client of a server-sent events stream: sends `GET path` and hands
/// each complete event to its listener. The HTTP framing is NIO's; events
/// are cut at the blank line that ends them, scanning each byte once
/// (whole values of a large leaderboard are hundreds of kilobytes).
final class EventStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let client: Int
    private let path: String
    private let listener: any EventStreamListener
    private var pending: [UInt8] = []
    /// Where the search for the next blank line resumes.
    private var scanned = 0

    init(client: Int, path: String, listener: any EventStreamListener) {
        self.client = client
        self.path = path
        self.listener = listener
    }

    func channelActive(context: ChannelHandlerContext) {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
        head.headers.add(name: "Host", value: "127.0.0.1")
        head.headers.add(name: "Accept", value: "text/event-stream")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if head.status != .ok {
                listener.ended(client: client, status: head.status)
                context.close(promise: nil)
            }
        case .body(let buffer):
            let now = nowNanoseconds()
            pending.append(contentsOf: buffer.readableBytesView)
            cutEvents(receivedAt: now)
        case .end:
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        listener.ended(client: client, status: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func cutEvents(receivedAt time: UInt64) {
        var start = 0
        var index = max(scanned, 0)
        let newline = UInt8(ascii: "\n")
        while index + 1 < pending.count {
            if pending[index] == newline && pending[index + 1] == newline {
                listener.received(Self.event(in: pending[start..<index]), client: client, at: time)
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        if start > 0 { pending.removeFirst(start) }
        scanned = index - start
    }

    /// The `event:` and `data:` lines of one event (other lines are ignored).
    static func event(in bytes: ArraySlice<UInt8>) -> ServerEvent {
        var event = ServerEvent(name: [], data: [])
        var lineStart = bytes.startIndex
        while lineStart < bytes.endIndex {
            let lineEnd = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            let line = bytes[lineStart..<lineEnd]
            if line.starts(with: eventPrefix) {
                event.name = line.dropFirst(eventPrefix.count)
            } else if line.starts(with: dataPrefix) {
                event.data = line.dropFirst(dataPrefix.count)
            }
            lineStart = lineEnd + 1
        }
        return event
    }

    private static let eventPrefix = Array("event: ".utf8)
    private static let dataPrefix = Array("data: ".utf8)
}
