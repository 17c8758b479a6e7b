#if Vapor
    @_exported import DBWatchDelivery
    @_exported import DBWatchMetrics
    import Foundation
    import Vapor

    /// Live queries in a Vapor application: add them to the application's
    /// lifecycle, and their routes answer with ``LiveQueries/current(_:for:)``,
    /// ``LiveQueries/events(_:for:scope:)`` and
    /// ``LiveQueries/webSocket(_:for:webSocket:scope:maxMessageSize:)``;
    /// ``LiveQueries/addSyncRoutes(to:path:owner:resolve:)`` adds the sync
    /// protocol's routes.
    ///
    /// ```swift
    /// let live = LiveQueries(try DatabasePool(path: "app.sqlite"))
    /// app.lifecycle.use(live)                              // keep-alives, stalls, graceful shutdown
    /// app.middleware.use(LiveQueriesErrorMiddleware(live))   // one JSON error shape
    /// app.get("leaderboard", "events") { request in live.events(TopPlayers(), for: request) }
    /// ```
    ///
    /// Shutdown order. Vapor's `asyncShutdown()` calls the lifecycle
    /// handlers before it stops its HTTP server: there every stream ends at
    /// once with its final `end` event (new ones are refused with a 503),
    /// writes still blocked get ``LiveQueriesConfiguration/shutdownWriteGrace``,
    /// and the database closes (see
    /// ``LiveQueriesConfiguration/closesDatabaseOnShutdown``); then the
    /// server finds no stream to wait for. Without the lifecycle handler,
    /// streams work but get neither keep-alives nor stall detection, and
    /// nothing ends them on shutdown.
    extension LiveQueries: LifecycleHandler {
        /// Starts keep-alives and stall detection: Vapor calls it when the
        /// application boots.
        ///
        /// ```swift
        /// app.lifecycle.use(live)   // then try await app.execute()
        /// ```
        public func didBoot(_ application: Application) throws {
            var tasks = application.storage[Housekeeping.self] ?? [:]
            tasks[ObjectIdentifier(self)] = Task { await runHousekeeping() }
            application.storage[Housekeeping.self] = tasks
        }

        /// Graceful shutdown: ends every stream with its final event, gives
        /// blocked writes the grace, stops the observations and closes the
        /// database. Vapor calls it from `asyncShutdown()`, before its HTTP
        /// server stops.
        ///
        /// ```swift
        /// try await app.execute()
        /// try await app.asyncShutdown()   // the streams end, then the database closes
        /// ```
        public func shutdownAsync(_ application: Application) async {
            var tasks = application.storage[Housekeeping.self] ?? [:]
            let housekeeping = tasks.removeValue(forKey: ObjectIdentifier(self))
            application.storage[Housekeeping.self] = tasks
            housekeeping?.cancel()
            await housekeeping?.value
            await shutDown()
        }

        /// Graceful shutdown from Vapor's synchronous `shutdown()` (not used
        /// in async code): waits for ``shutdownAsync(_:)`` on another thread.
        ///
        /// ```swift
        /// defer { app.shutdown() }   // a synchronous main
        /// ```
        public func shutdown(_ application: Application) {
            let done = DispatchSemaphore(value: 0)
            Task {
                await shutdownAsync(application)
                done.signal()
            }
            done.wait()
        }
    }

    /// The housekeeping task of each ``LiveQueries`` of an application.
    private struct Housekeeping: StorageKey {
        typealias Value = [ObjectIdentifier: Task<Void, Never>]
    }

    extension Response {
        /// The engine's answer as a Vapor response.
        convenience init(_ answer: HTTPAnswer) {
            self.init(
                status: HTTPResponseStatus(statusCode: answer.status), headers: HTTPHeaders(answer.headers),
                body: Body(buffer: ByteBuffer(bytes: answer.body)))
        }
    }

    extension HTTPHeaders {
        /// The engine's header fields, in order.
        init(_ fields: [(name: String, value: String)]) {
            self.init()
            for (name, value) in fields { add(name: name, value: value) }
        }
    }
#endif
