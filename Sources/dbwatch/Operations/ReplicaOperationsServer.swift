import DBWatch
import DBWatchDelivery
import DBWatchHummingbird
import DBWatchPostgres
import Hummingbird
import Logging

/// The HTTP side of `replicate --metrics`, on its own address:
///
/// - `GET /metrics`: the replica's metrics in Prometheus' text format
/// - `GET /healthz`: 200 while the process answers
/// - `GET /readyz`: 200 when the file answers a read and the replica
///   streams, connected, caught up since it connected and at most
///   `maxLag` seconds behind; else 503 with `{"message"}` saying why
///
/// A `Host` that is not this machine's, an IP address or the listening
/// address is a 403 (``TrustedHostMiddleware``), as for `serve`.
///
/// ```swift
/// let app = ReplicaOperationsServer(replica: replica, database: pool, maxLag: 10)
///     .application(at: address, logger: logger) { url in print(url) }
/// ```
struct ReplicaOperationsServer: Sendable {
    /// The replica reported.
    let replica: PostgresReplica
    /// Its SQLite file, read by `/readyz`.
    let database: any DatabaseWriter
    /// The most seconds behind PostgreSQL `/readyz` accepts.
    let maxLag: Double
    /// Where the metrics go.
    let endpoint: PrometheusEndpoint

    /// The routes.
    func makeRouter(allowedHosts: [String]) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: TrustedHostMiddleware(allowedHosts: allowedHosts))
        router.add(middleware: JSONErrorMiddleware())
        let metrics = PostgresReplicaMetrics(replica, factory: endpoint.factory)
        endpoint.addRoute(to: router) { metrics.record() }
        router.get("healthz") { _, _ in Response(.health) }
        router.get("readyz") { [replica, database, maxLag] _, _ in
            Response(await .readiness(of: database, notReady: replica.status.unreadiness(maxLag: maxLag)))
        }
        return router
    }

    /// The server on `address`; `onListening` gets its URL once it listens.
    func application(
        at address: OperationsAddress, logger: Logger, onListening: @escaping @Sendable (String) -> Void
    ) -> some ApplicationProtocol {
        let shownHost = address.host.contains(":") ? "[\(address.host)]" : address.host
        return Application(
            router: makeRouter(allowedHosts: [address.host]),
            configuration: .init(address: .hostname(address.host, port: address.port)),
            onServerRunning: { channel in
                onListening("http://\(shownHost):\(channel.localAddress?.port ?? address.port)/")
            },
            logger: logger)
    }
}
