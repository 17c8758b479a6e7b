import BenchProcess
import NIOCore
import NIOHTTP1
import Synchronization

/// Every SSE client, by event loop; a broadcast is one task per event loop
/// that writes the same buffer to each of its clients.
final class Hub: Sendable {
    private struct Slot: Sendable {
        let loop: any EventLoop
        let clients: NIOLoopBoundBox<[ObjectIdentifier: FloorHandler]>
    }

    private let slots: [Slot]
    private let current: Mutex<ByteBuffer>
    private let clientCount = Atomic<Int>(0)
    private let sentCount = Atomic<Int>(0)

    init(group: any EventLoopGroup, first: ByteBuffer) {
        slots = group.makeIterator().map { loop in
            Slot(loop: loop, clients: .makeBoxSendingValue([:], eventLoop: loop))
        }
        current = Mutex(first)
    }

    var clients: Int { clientCount.load(ordering: .relaxed) }
    var sent: Int { sentCount.load(ordering: .relaxed) }

    /// Adds `handler`, on its event loop `loop`; returns the current frame.
    func register(_ handler: FloorHandler, on loop: any EventLoop) -> ByteBuffer {
        slot(of: loop).clients.value[ObjectIdentifier(handler)] = handler
        clientCount.add(1, ordering: .relaxed)
        return current.withLock { $0 }
    }

    func unregister(_ handler: FloorHandler, on loop: any EventLoop) {
        if slot(of: loop).clients.value.removeValue(forKey: ObjectIdentifier(handler)) != nil {
            clientCount.subtract(1, ordering: .relaxed)
        }
    }

    /// The new current frame, written to every client: one task per event loop.
    func broadcast(_ frame: ByteBuffer) {
        current.withLock { $0 = frame }
        for slot in slots {
            slot.loop.execute {
                let clients = slot.clients.value
                for handler in clients.values { handler.send(frame) }
                self.sentCount.add(clients.count, ordering: .relaxed)
            }
        }
    }

    private func slot(of loop: any EventLoop) -> Slot {
        slots.first { $0.loop === loop } ?? slots[0]
    }
}

/// One connection: answers `POST /board/write/:round` and `GET /stats`, or
/// becomes an SSE stream on `GET /board/events`.
final class FloorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    private let hub: Hub
    private let database: BoardDatabase
    private var context: ChannelHandlerContext?
    private var request: HTTPRequestHead?
    private var streaming = false
    /// A frame that waits for the channel to become writable (latest wins).
    private var pending: ByteBuffer?

    init(hub: Hub, database: BoardDatabase) {
        self.hub = hub
        self.database = database
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
            if head.method == .GET && head.uri == "/board/events" {
                streaming = true
                context.write(wrapOutboundOut(Self.streamHead), promise: nil)
                send(hub.register(self, on: context.eventLoop))
            }
        case .body:
            break
        case .end:
            if let head = request, !streaming { answer(head, context: context) }
            request = nil
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let frame = pending {
            pending = nil
            context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if streaming { hub.unregister(self, on: context.eventLoop) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Writes one frame of the stream, on the channel's event loop.
    func send(_ frame: ByteBuffer) {
        guard let context else { return }
        if context.channel.isWritable {
            context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        } else {
            pending = frame
        }
    }

    private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let parts = head.uri.split(separator: "/")
        if head.method == .POST, parts.count == 3, parts[0] == "board", parts[1] == "write",
            let round = Int(parts[2])
        {
            do {
                let commit = try database.write(round: round)
                hub.broadcast(try database.fetchFrame())
                respond("\(round) \(commit)", context: context)
            } catch {
                respond("\(error)", status: "500 Internal Server Error", context: context)
            }
        } else if head.method == .GET, head.uri == "/stats" {
            respond(
                "rss=\(residentBytes()) cpu=\(cpuNanoseconds()) clients=\(hub.clients) "
                    + "fetches=\(database.fetches) sent=\(hub.sent)",
                context: context)
        } else {
            respond("not found", status: "404 Not Found", context: context)
        }
    }

    private func respond(_ body: String, status: String = "200 OK", context: ChannelHandlerContext) {
        let bytes = Array(body.utf8)
        var buffer = context.channel.allocator.buffer(capacity: bytes.count + 96)
        buffer.writeString(
            "HTTP/1.1 \(status)\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: \(bytes.count)\r\n\r\n")
        buffer.writeBytes(bytes)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    /// The head of an SSE response, as Hummingbird sends it (chunked body).
    static let streamHead = ByteBuffer(
        string:
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
    )
}
