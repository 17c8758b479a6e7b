import NIOCore
import NIOPosix
import DBWatchTestSupport

/// A TCP proxy on 127.0.0.1 in front of a test server: tests cut its
/// connections (a network that drops) and point it at another server (a
/// restarted one), deterministically.
final class TCPProxy: Sendable {
    /// The proxy's port.
    let port: Int
    private let server: any Channel
    private let accepting: Task<Void, Never>
    private let state: Protected<(target: Int, connections: [any Channel])>

    private init(
        port: Int, server: any Channel, accepting: Task<Void, Never>,
        state: Protected<(target: Int, connections: [any Channel])>
    ) {
        self.port = port
        self.server = server
        self.accepting = accepting
        self.state = state
    }

    /// Runs `body` with a proxy to `targetPort`, then stops it.
    static func with<T: Sendable>(to targetPort: Int, _ body: (TCPProxy) async throws -> T) async throws -> T {
        let proxy = try await start(to: targetPort)
        do {
            let result = try await body(proxy)
            await proxy.stop()
            return result
        } catch {
            await proxy.stop()
            throw error
        }
    }

    private static func start(to targetPort: Int) async throws -> TCPProxy {
        let group = MultiThreadedEventLoopGroup.singleton
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { child in
                child.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: child)
                }
            }
        let state = Protected<(target: Int, connections: [any Channel])>((targetPort, []))
        let accepting = Task<Void, Never> {
            try? await server.executeThenClose { inbound in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in inbound {
                        group.addTask { try? await pipe(connection, state: state) }
                    }
                }
            }
        }
        return TCPProxy(
            port: server.channel.localAddress?.port ?? 0, server: server.channel, accepting: accepting, state: state)
    }

    /// Copies bytes both ways between `inbound` and a new connection to the target.
    private static func pipe(
        _ inbound: NIOAsyncChannel<ByteBuffer, ByteBuffer>, state: Protected<(target: Int, connections: [any Channel])>
    ) async throws {
        let target = state.withLock { $0.target }
        let outbound = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: target) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        state.withLock { $0.connections += [inbound.channel, outbound.channel] }
        try await inbound.executeThenClose { clientIn, clientOut in
            try await outbound.executeThenClose { serverIn, serverOut in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { for try await bytes in clientIn { try await serverOut.write(bytes) } }
                    group.addTask { for try await bytes in serverIn { try await clientOut.write(bytes) } }
                    defer { group.cancelAll() }
                    try await group.next()
                }
            }
        }
    }

    /// New connections go to `port` (a restarted server).
    func retarget(to port: Int) {
        state.withLock { $0.target = port }
    }

    /// Closes every connection made so far, both sides.
    func dropConnections() async {
        let connections = state.withLock { state in
            defer { state.connections = [] }
            return state.connections
        }
        for connection in connections { try? await connection.close() }
    }

    /// Closes every connection but the first `count` made so far (a
    /// stream that stays with its server while the next requests go to
    /// another, as behind a load balancer).
    func dropConnections(keepingFirst count: Int) async {
        let connections = state.withLock { state in
            // Each connection is a pair: the client's side, then the server's.
            defer { state.connections = Array(state.connections.prefix(2 * count)) }
            return Array(state.connections.dropFirst(2 * count))
        }
        for connection in connections { try? await connection.close() }
    }

    private func stop() async {
        try? await server.close()
        accepting.cancel()
        await dropConnections()
        await accepting.value
    }
}
