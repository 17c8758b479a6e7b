import ServiceLifecycle

/// `LiveQueriesMetrics` as a ServiceLifecycle `Service`: records every
/// interval until graceful shutdown.
///
/// ```swift
/// let app = Application(router: router, services: [live, LiveQueriesMetrics(live)])
/// ```
extension LiveQueriesMetrics: Service {
    /// Records every `interval` until graceful
    /// shutdown or cancellation, then once more.
    ///
    /// ```swift
    /// try await metrics.run()
    /// ```
    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.record(every: self.interval) }
    }
}
