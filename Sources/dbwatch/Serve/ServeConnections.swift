import DBWatchHummingbird
import Hummingbird
import HummingbirdCore
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// What `serve`'s connections may hold: how many are open at once, how
/// long a request head may take, and each socket's unsent bytes.
///
/// ```swift
/// var connections = ServeConnections()
/// connections.maxConnections = 1_000
/// let app = Application(router: router, server: connections.server, configuration: connections.configuration(host: "127.0.0.1", port: 0, logger: logger))
/// ```
struct ServeConnections: Sendable {
    /// The request head timeout, send buffer and unsent-data timeout of each connection.
    var limits = ConnectionLimits()
    /// The most connections open at once; the kernel queues the next ones
    /// (the listen backlog) until one closes.
    var maxConnections = ServeConnections.defaultMaxConnections

    /// The open-file limit less 64 (for the database's files, the
    /// listening socket and the ones being accepted), at least 16.
    static var defaultMaxConnections: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else {
            return 10_000
        }
        return max(16, Int(clamping: limit.rlim_cur) - 64)
    }

    /// The HTTP/1 server, its connections limited.
    var server: HTTPServerBuilder { .http1(limits: limits) }

    /// The application's configuration on `host:port`, with the cap on connections.
    func configuration(host: String, port: Int, logger: Logger) -> ApplicationConfiguration {
        ApplicationConfiguration(
            address: .hostname(host, port: port), serverName: nil,
            availableConnectionsDelegate: MaximumAvailableConnections(maxConnections, logger: logger))
    }
}
