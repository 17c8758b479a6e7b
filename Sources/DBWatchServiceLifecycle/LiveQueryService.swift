import DBWatch
import ServiceLifecycle

/// A `LiveQuery` as a ServiceLifecycle `Service` that ends on graceful
/// shutdown: its ``run()`` runs the live query and, on graceful shutdown,
/// calls `finish()`, so the subscribers' loops (the streams they feed) end
/// after their last value before a server waits for them.
///
/// `LiveQuery` itself is not a `Service`: its `run()` does not throw and
/// cannot see ServiceLifecycle's graceful shutdown, so a bare conformance
/// would keep it running (and its streams open) until cancelled.
///
/// ```swift
/// let leaderboard = LiveQuery(TopPlayers(), in: pool)
/// let app = Application(router: router, services: [leaderboard.service])
/// try await app.runService()   // SIGTERM: the leaderboard's streams end
/// ```
public struct LiveQueryService<Request: Queryable>: Service, Sendable {
    /// The live query run by this service.
    ///
    /// ```swift
    /// service.liveQuery.fetchedValue
    /// ```
    public let liveQuery: LiveQuery<Request>

    /// A service running `liveQuery`.
    ///
    /// ```swift
    /// let service = LiveQueryService(LiveQuery(TopPlayers(), in: pool))
    /// ```
    ///
    /// - Parameter liveQuery: the live query to run.
    public init(_ liveQuery: LiveQuery<Request>) {
        self.liveQuery = liveQuery
    }

    /// Runs the live query until graceful shutdown (then `finish()` ends
    /// it, also when another `run()` of it is the one observing),
    /// cancellation, or the database's close.
    ///
    /// ```swift
    /// let group = ServiceGroup(configuration: .init(services: [service], logger: logger))
    /// try await group.run()
    /// ```
    public func run() async throws {
        let liveQuery = liveQuery
        await withGracefulShutdownHandler {
            // Cancelled on graceful shutdown as well: cancellation is sticky,
            // so a shutdown that came before `run()` started observing (when
            // `finish()` had nothing to end yet) still makes it return.
            await cancelWhenGracefulShutdown { await liveQuery.run() }
        } onGracefulShutdown: {
            liveQuery.finish()
        }
    }
}

extension LiveQuery {
    /// This live query as a ServiceLifecycle `Service` that ends on
    /// graceful shutdown (see ``LiveQueryService``).
    ///
    /// ```swift
    /// let app = Application(router: router, services: [leaderboard.service])
    /// ```
    public var service: LiveQueryService<Request> { LiveQueryService(self) }
}
