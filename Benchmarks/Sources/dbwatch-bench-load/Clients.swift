import BenchProcess
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What every SSE client received: its first value, and when it received
/// the round being measured (`CLOCK_MONOTONIC` nanoseconds, taken as the
/// bytes arrive, before parsing).
final class Recorder: Sendable {
    private struct State {
        var gotFirst: [Bool]
        var firstValues = 0
        /// The round being measured, and when each client first held it (or a later one).
        var target = Int.max
        var times: [UInt64]
        var reached = 0
        var refused = 0
        var closed = 0
    }

    private let state: Mutex<State>

    init(clients: Int) {
        state = Mutex(
            State(gotFirst: Array(repeating: false, count: clients), times: Array(repeating: 0, count: clients)))
    }

    func received(client: Int, round: Int, at time: UInt64) {
        state.withLock { state in
            if !state.gotFirst[client] {
                state.gotFirst[client] = true
                state.firstValues += 1
            }
            if round >= state.target && state.times[client] == 0 {
                state.times[client] = time
                state.reached += 1
            }
        }
    }

    func refused() { state.withLock { $0.refused += 1 } }
    func closed() { state.withLock { $0.closed += 1 } }

    /// Starts measuring `round`: forgets the receipts of the previous one.
    func arm(round: Int) {
        state.withLock { state in
            state.target = round
            state.reached = 0
            for index in state.times.indices { state.times[index] = 0 }
        }
    }

    var counts: (firstValues: Int, reached: Int, refused: Int, closed: Int) {
        state.withLock { ($0.firstValues, $0.reached, $0.refused, $0.closed) }
    }

    /// When `client` received the measured round (0: not yet).
    func time(of client: Int) -> UInt64 { state.withLock { $0.times[client] } }

    /// The receipt times of the measured round, of the clients that got it.
    var receipts: [UInt64] { state.withLock { $0.times.filter { $0 != 0 } } }
}

/// One SSE client: sends `GET path`, then reads events and reports the
/// number after the first `marker` of each to the recorder (`"round":` in
/// the board of `dbwatch-bench-server`, `"round:` in the rows of `dbwatch serve`). The HTTP framing (chunked body) is
/// NIO's `HTTPResponseDecoder`; the SSE framing is a minimal scan for the
/// blank line that ends an event.
final class ServerSentEventsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let client: Int
    private let path: String
    private let recorder: Recorder
    private let marker: [UInt8]
    private let headers: [(String, String)]
    private var pending: [UInt8] = []

    init(
        client: Int, path: String, recorder: Recorder, marker: [UInt8] = ServerSentEventsHandler.roundField,
        headers: [(String, String)] = []
    ) {
        self.client = client
        self.path = path
        self.recorder = recorder
        self.marker = marker
        self.headers = headers
    }

    func channelActive(context: ChannelHandlerContext) {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
        head.headers.add(name: "Host", value: "127.0.0.1")
        head.headers.add(name: "Accept", value: "text/event-stream")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if head.status != .ok {
                recorder.refused()
                context.close(promise: nil)
            }
        case .body(let buffer):
            let now = nowNanoseconds()
            pending.append(contentsOf: buffer.readableBytesView)
            parseEvents(receivedAt: now)
        case .end:
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        recorder.closed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func parseEvents(receivedAt time: UInt64) {
        var start = 0
        var index = 0
        while index + 1 < pending.count {
            if pending[index] == UInt8(ascii: "\n") && pending[index + 1] == UInt8(ascii: "\n") {
                if let round = Self.round(in: pending[start..<index], after: marker) {
                    recorder.received(client: client, round: round, at: time)
                }
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        if start > 0 { pending.removeFirst(start) }
    }

    /// The board's `"round":` field.
    static let roundField = Array(#""round":"#.utf8)

    /// The number after the first `marker` of an event.
    static func round(in event: ArraySlice<UInt8>, after marker: [UInt8]) -> Int? {
        var index = event.startIndex
        let last = event.endIndex - marker.count
        while index <= last {
            if event[index] == marker[0] && event[index..<(index + marker.count)].elementsEqual(marker) {
                var value = 0
                var digit = index + marker.count
                var negative = false
                if digit < event.endIndex && event[digit] == UInt8(ascii: "-") {
                    negative = true
                    digit += 1
                }
                while digit < event.endIndex, event[digit] >= UInt8(ascii: "0"), event[digit] <= UInt8(ascii: "9") {
                    value = value * 10 + Int(event[digit] - UInt8(ascii: "0"))
                    digit += 1
                }
                return negative ? -value : value
            }
            index += 1
        }
        return nil
    }
}

/// Opens SSE connections to 127.0.0.1 in batches, each batch waiting for its
/// clients' first values, so that the server's accept queue never overflows.
func connectClients(
    count: Int, path: (Int) -> String, port: Int, group: any EventLoopGroup, recorder: Recorder,
    marker: [UInt8] = ServerSentEventsHandler.roundField, headers: [(String, String)] = [], batch: Int = 500,
    timeoutSeconds: Double = 60
) async throws -> [any Channel] {
    var channels: [any Channel] = []
    channels.reserveCapacity(count)
    let deadline = nowNanoseconds() + UInt64(timeoutSeconds * 1e9)
    var opened = 0
    while opened < count {
        let end = min(opened + batch, count)
        var futures: [EventLoopFuture<any Channel>] = []
        for client in opened..<end {
            let clientPath = path(client)
            let future = ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(
                            ServerSentEventsHandler(
                                client: client, path: clientPath, recorder: recorder, marker: marker,
                                headers: headers))
                    }
                }
                .connect(host: "127.0.0.1", port: port)
            futures.append(future)
        }
        for future in futures {
            channels.append(try await future.get())
        }
        opened = end
        while recorder.counts.firstValues < opened {
            let counts = recorder.counts
            if counts.refused > 0 || counts.closed > 0 {
                throw LoadError(description: "\(counts.refused) refused, \(counts.closed) closed while connecting")
            }
            if nowNanoseconds() > deadline {
                throw LoadError(
                    description: "only \(counts.firstValues) of \(opened) clients got a first value in time")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
    return channels
}

/// Closes every client and waits for the closes.
func closeClients(_ channels: [any Channel]) async {
    for channel in channels {
        try? await channel.close()
    }
}

/// Plain HTTP requests to the server: one connection each, or many on one
/// kept-alive connection.
struct HTTPControl: Sendable {
    let port: Int
    let group: any EventLoopGroup

    typealias Connection = NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>

    func connect() async throws -> Connection {
        try await ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try Connection(wrappingChannelSynchronously: channel)
                }
            }
    }

    /// One request on a new connection; returns the body.
    func request(_ method: HTTPMethod, _ path: String) async throws -> String {
        let connection = try await connect()
        return try await connection.executeThenClose { inbound, outbound in
            var responses = inbound.makeAsyncIterator()
            return try await Self.exchange(method, path, outbound: outbound, responses: &responses)
        }
    }

    /// Sends one request and reads its response.
    static func exchange(
        _ method: HTTPMethod, _ path: String, outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>,
        responses: inout NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
    ) async throws -> String {
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: path)
        head.headers.add(name: "Host", value: "127.0.0.1")
        head.headers.add(name: "Content-Length", value: "0")
        try await outbound.write(.head(head))
        try await outbound.write(.end(nil))
        var body = ""
        var status = HTTPResponseStatus.ok
        while let part = try await responses.next() {
            switch part {
            case .head(let head): status = head.status
            case .body(let buffer): body += String(buffer: buffer)
            case .end:
                guard status == .ok else { throw LoadError(description: "\(method) \(path): \(status) \(body)") }
                return body
            }
        }
        throw LoadError(description: "\(method) \(path): connection closed")
    }

    /// A write: returns the commit time the server reports.
    func write(_ path: String) async throws -> UInt64 {
        try Self.commitTime(await request(.POST, path))
    }

    static func commitTime(_ body: String) throws -> UInt64 {
        guard let text = body.split(separator: " ").last, let time = UInt64(text) else {
            throw LoadError(description: "unexpected write answer: \(body)")
        }
        return time
    }

    /// Writes per second of `POST /burst/kind/2000`: writes one after
    /// another inside the server process, without HTTP per write.
    func burst(_ kind: String) async throws -> Double {
        let parts = try await request(.POST, "/burst/\(kind)/2000").split(separator: " ").compactMap { Double($0) }
        guard parts.count == 2, parts[1] > 0 else { throw LoadError(description: "unexpected burst answer") }
        return parts[0] / (parts[1] / 1e9)
    }

    /// The server's `GET /stats`, as numbers.
    func stats() async throws -> ServerStats {
        let body = try await request(.GET, "/stats")
        var fields: [Substring: Int] = [:]
        for pair in body.split(separator: " ") {
            let parts = pair.split(separator: "=")
            if parts.count == 2 { fields[parts[0]] = Int(parts[1]) }
        }
        return ServerStats(
            rss: fields["rss"] ?? 0, cpu: fields["cpu"] ?? 0, clients: fields["clients"] ?? 0,
            fetches: fields["fetches"] ?? 0, sent: fields["sent"] ?? 0)
    }

    /// Writes as fast as `connections` kept-alive connections allow for
    /// `seconds`; returns writes per second. `path(i)` is the i-th write of a connection.
    func throughput(connections: Int, seconds: Double, path: @escaping @Sendable (Int, Int) -> String) async throws
        -> Double
    {
        let start = nowNanoseconds()
        let deadline = start + UInt64(seconds * 1e9)
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<connections {
                group.addTask {
                    let connection = try await connect()
                    return try await connection.executeThenClose { inbound, outbound in
                        var responses = inbound.makeAsyncIterator()
                        var count = 0
                        while nowNanoseconds() < deadline {
                            _ = try await Self.exchange(
                                .POST, path(worker, count), outbound: outbound, responses: &responses)
                            count += 1
                        }
                        return count
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        return Double(total) / (Double(nowNanoseconds() - start) / 1e9)
    }
}

struct ServerStats {
    var rss: Int
    var cpu: Int
    var clients: Int
    var fetches: Int
    var sent: Int
}

struct LoadError: Error, CustomStringConvertible {
    let description: String
}
