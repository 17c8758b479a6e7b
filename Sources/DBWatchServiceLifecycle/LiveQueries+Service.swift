import DBWatch
import DBWatchDelivery
import ServiceLifecycle

/// `LiveQueries` as a ServiceLifecycle `Service`: add it to the
/// application's services.
///
/// ```swift
/// let pool = try DatabasePool(path: "app.sqlite")
/// let live = LiveQueries(pool)
/// let router = Router()
/// router.get("leaderboard") { _, context in await live.current(TopPlayers(), context: context) }
/// router.get("leaderboard/events") { request, context in
///     live.events(TopPlayers(), for: request, context: context)
/// }
/// let app = Application(router: router, services: [live])
/// try await app.runService()
/// ```
///
/// Shutdown order. Hummingbird's `Application` shuts its services down in
/// reverse order: the HTTP server first, then the services listed in
/// `services:`. On graceful shutdown each stream ends at once with a final
/// `event: end` (a task that the first stream starts sees the server's
/// shutdown and ends them all), so the server does not wait for open
/// streams; then ``run()`` ends the streams that remain,
/// stops the observations and closes the database (see
/// `LiveQueriesConfiguration.closesDatabaseOnShutdown`). Keep-alives and
/// stall detection run in ``run()``: without it, streams still work but get
/// neither.
extension LiveQueries: Service {
    /// Runs keep-alives and stall detection until graceful shutdown or
    /// cancellation; then ends every stream with a final event, stops the
    /// observations and closes the database.
    ///
    /// ```swift
    /// let app = Application(router: router, services: [live])   // runs it, after the server on shutdown
    /// ```
    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.runHousekeeping() }
        await shutDown()
    }
}
