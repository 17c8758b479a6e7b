import Hummingbird

extension LiveQueries {
    /// Adds `GET /healthz` (200 while the process answers) and `GET /readyz`
    /// (200 when the live queries accept clients and the database answers a
    /// read; 503 with a JSON `{"message"}` otherwise), for a load balancer's
    /// checks.
    ///
    /// ```swift
    /// live.addHealthRoutes(to: router)
    /// // with a replica: unready while it is more than 5 s behind
    /// live.addHealthRoutes(to: router) { replica.status.unreadiness(maxLag: 5) }
    /// ```
    ///
    /// - Parameters:
    ///   - router: the router (or group) the two routes are added to.
    ///   - condition: a further reason to be unready, `nil` when ready;
    ///     called on each `/readyz`.
    public func addHealthRoutes<Context: RequestContext>(
        to router: some RouterMethods<Context>, condition: @escaping @Sendable () -> String? = { nil }
    ) {
        router.get("healthz") { _, _ in Response(.health) }
        router.get("readyz") { [self] _, _ in Response(await readinessAnswer(condition: condition)) }
    }
}
