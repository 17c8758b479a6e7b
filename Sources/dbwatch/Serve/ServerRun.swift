import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

#if canImport(Glibc)
    import Glibc
#endif

/// A ``QueryServer`` listening: its address, and how to stop it.
///
/// ```swift
/// let running = try await ServerRun.start(server, host: "127.0.0.1", port: 0)
/// print(running.url)               // http://127.0.0.1:41234/
/// try await running.stop()         // every stream ends with `event: end`
/// ```
struct ServerRun: Sendable {
    /// The address clients use: `http://HOST:PORT/`.
    let url: String
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    /// Starts `server` on `host:port` (0: any free port) and returns once it
    /// listens; the HTTP server and its requests log to `logger` (nothing
    /// below critical by default). An address that cannot be used throws a
    /// ``CommandFailure`` with ``ExitStatus/cannotListen``.
    static func start(
        _ server: QueryServer, host: String, port: Int, logger: Logger = ServeCommand.logger(level: .critical)
    ) async throws -> ServerRun {
        let (addresses, continuation) = AsyncStream.makeStream(of: String.self)
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let app = server.application(host: host, port: port, logger: logger) { address in
            continuation.yield("http://\(shownHost):\(address?.port ?? port)/")
            continuation.finish()
        }
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let running = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = addresses.makeAsyncIterator()
        guard let url = await iterator.next() else {
            do {
                try await running.value
            } catch let error as IOError {
                throw CommandFailure(.cannotListen, listenFailure(error, host: host, port: port))
            } catch is SocketAddressError, is SocketAddressError.UnknownHost {
                throw CommandFailure(
                    .cannotListen, "cannot listen on \(CellText.sanitized(host)):\(port): no such host or address")
            }
            throw CommandFailure(.failure, "the server stopped before it listened")
        }
        return ServerRun(url: url, group: group, running: running)
    }

    /// Waits until the server stops (after ``stop()``, or a failure).
    func wait() async throws {
        try await running.value
    }

    /// Graceful shutdown: every stream ends with a final event, then the
    /// server stops; returns once it has.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await running.value
    }

    /// Why `host:port` cannot be used, in words.
    static func listenFailure(_ error: IOError, host: String, port: Int) -> String {
        let address = "\(CellText.sanitized(host)):\(port)"
        switch error.errnoCode {
        case EADDRINUSE:
            return "cannot listen on \(address): the address is already in use (another server?); choose another --port"
        case EACCES:
            return "cannot listen on \(address): permission denied (ports below 1024 need privileges)"
        case EADDRNOTAVAIL:
            return "cannot listen on \(address): the address is not one of this machine's"
        default:
            return "cannot listen on \(address): \(error)"
        }
    }
}
