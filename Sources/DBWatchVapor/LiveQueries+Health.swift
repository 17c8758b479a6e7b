#if Vapor
    import Vapor

    extension LiveQueries {
        /// Adds `GET /healthz` (200 while the process answers) and `GET /readyz`
        /// (200 when the live queries accept clients and the database answers a
        /// read; 503 with a JSON `{"message"}` otherwise), for a load balancer's
        /// checks.
        ///
        /// ```swift
        /// live.addHealthRoutes(to: app)
        /// // with a replica: unready while it is more than 5 s behind
        /// live.addHealthRoutes(to: app) { replica.status.unreadiness(maxLag: 5) }
        /// ```
        ///
        /// - Parameters:
        ///   - routes: the application (or route group) the two routes are
        ///     added to.
        ///   - condition: a further reason to be unready, `nil` when ready;
        ///     called on each `/readyz`.
        public func addHealthRoutes(
            to routes: some RoutesBuilder, condition: @escaping @Sendable () -> String? = { nil }
        ) {
            routes.get("healthz") { _ in Response(.health) }
            routes.get("readyz") { [self] _ async in Response(await readinessAnswer(condition: condition)) }
        }
    }
#endif
