import DBWatchMetrics
import Hummingbird
import Metrics
import Prometheus

/// The backend of `serve --metrics` and `replicate --metrics`: a
/// swift-prometheus registry bootstrapped as the process's metrics system
/// (the libraries never bootstrap), and `GET /metrics` in Prometheus' text
/// format. Each scrape first asks the reporters to read their counters.
///
/// ```swift
/// let endpoint = PrometheusEndpoint.bootstrap()
/// let metrics = LiveQueriesMetrics(live, factory: endpoint.factory)
/// endpoint.addRoute(to: router) { metrics.record() }
/// ```
struct PrometheusEndpoint: Sendable {
    /// The registry the metrics are written to.
    let registry: PrometheusCollectorRegistry
    /// The factory over ``registry``.
    let factory: PrometheusMetricsFactory

    /// The content type of Prometheus' text format.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A registry, bootstrapped as the process's metrics system: call once,
    /// in a command's `run()`.
    static func bootstrap() -> PrometheusEndpoint {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // `dbwatch_fetch_duration_seconds` in the buckets the core counts.
        factory.durationHistogramBuckets = LiveQueriesMetrics.timerBuckets
        MetricsSystem.bootstrap(factory)
        return PrometheusEndpoint(registry: registry, factory: factory)
    }

    /// The registry's metrics in Prometheus' text format, after `record`.
    func scrape(record: () -> Void) -> [UInt8] {
        record()
        return registry.emitToBuffer()
    }

    /// Adds `GET /metrics` to `router`; `record` runs before each scrape.
    func addRoute<Context: RequestContext>(
        to router: some RouterMethods<Context>, record: @escaping @Sendable () -> Void
    ) {
        router.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: Self.contentType, .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: scrape(record: record))))
        }
    }
}
