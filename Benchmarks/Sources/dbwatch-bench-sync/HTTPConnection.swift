import NIOCore
import NIOHTTP1
import NIOPosix

/// Requests one after another on one kept-alive HTTP/1.1 connection to 127.0.0.1.
struct HTTPConnection {
    typealias Channel = NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>

    private let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
    private var responses: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator

    /// Opens a connection, runs `body` with it, closes it.
    static func with<Result: Sendable>(
        port: Int, group: any EventLoopGroup, _ body: (inout HTTPConnection) async throws -> Result
    ) async throws -> Result {
        let channel = try await ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try Channel(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var connection = HTTPConnection(outbound: outbound, responses: inbound.makeAsyncIterator())
            return try await body(&connection)
        }
    }

    /// Sends one request (with a JSON body when given) and reads its answer.
    mutating func request(_ method: HTTPMethod, _ path: String, json: String? = nil) async throws -> (
        status: Int, body: String
    ) {
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: path)
        head.headers.add(name: "Host", value: "127.0.0.1")
        let bytes = json.map { Array($0.utf8) } ?? []
        head.headers.add(name: "Content-Length", value: "\(bytes.count)")
        if json != nil { head.headers.add(name: "Content-Type", value: "application/json") }
        try await outbound.write(.head(head))
        if !bytes.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: bytes)))) }
        try await outbound.write(.end(nil))
        var body = ""
        var status = 0
        while let part = try await responses.next() {
            switch part {
            case .head(let head): status = Int(head.status.code)
            case .body(let buffer): body += String(buffer: buffer)
            case .end: return (status, body)
            }
        }
        throw SyncBenchError(description: "\(method) \(path): connection closed")
    }

    /// A commit route (`POST /…/commit/ROUND`): the commit's time, as the server reports it.
    mutating func commit(_ path: String) async throws -> UInt64 {
        let answer = try await request(.POST, path)
        guard answer.status == 200, let text = answer.body.split(separator: " ").last, let time = UInt64(text) else {
            throw SyncBenchError(description: "POST \(path): \(answer.status) \(answer.body)")
        }
        return time
    }

    /// `GET /stats` as numbers by name.
    mutating func statistics() async throws -> [String: Int] {
        let answer = try await request(.GET, "/stats")
        var fields: [String: Int] = [:]
        for pair in answer.body.split(separator: " ") {
            let parts = pair.split(separator: "=")
            if parts.count == 2 { fields[String(parts[0])] = Int(parts[1]) }
        }
        return fields
    }
}
