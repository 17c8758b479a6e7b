import NIOCore
import NIOHTTP1
import NIOPosix

/// Opens `count` server-sent events streams of `path(client)` on
/// 127.0.0.1, `batch` at a time, each batch waiting until its clients got
/// a first event (a `hello` or a first value), so that the server's accept
/// queue never overflows.
func openEventStreams(
    count: Int, path: (Int) -> String, port: Int, group: any EventLoopGroup, recorder: StreamRecorder,
    batch: Int = 250, timeout: Duration = .seconds(120)
) async throws -> [any Channel] {
    var channels: [any Channel] = []
    channels.reserveCapacity(count)
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
                            EventStreamHandler(client: client, path: clientPath, listener: recorder))
                    }
                }
                .connect(host: "127.0.0.1", port: port)
            futures.append(future)
        }
        for future in futures { channels.append(try await future.get()) }
        opened = end
        let expected = opened
        try await recorder.wait(for: "opening \(count) streams", timeout: timeout) { $0.answered >= expected }
    }
    return channels
}

/// Closes every stream and waits for the closes.
func closeEventStreams(_ channels: [any Channel]) async {
    for channel in channels { try? await channel.close() }
}
