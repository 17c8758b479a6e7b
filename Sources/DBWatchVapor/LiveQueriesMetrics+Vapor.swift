#if Vapor
    import Vapor

    /// `LiveQueriesMetrics` as a Vapor lifecycle handler: records every
    /// `interval` from the application's boot until its
    /// shutdown, then once more.
    ///
    /// ```swift
    /// app.lifecycle.use(live)
    /// app.lifecycle.use(LiveQueriesMetrics(live))
    /// ```
    extension LiveQueriesMetrics: LifecycleHandler {
        /// Starts recording every `interval`: Vapor calls
        /// it when the application boots.
        ///
        /// ```swift
        /// app.lifecycle.use(metrics)   // then try await app.execute()
        /// ```
        public func didBoot(_ application: Application) throws {
            var tasks = application.storage[MetricsRecording.self] ?? [:]
            tasks[ObjectIdentifier(self)]?.cancel()
            tasks[ObjectIdentifier(self)] = Task { await record(every: interval) }
            application.storage[MetricsRecording.self] = tasks
        }

        /// Stops recording after a last record. Vapor calls it from
        /// `asyncShutdown()`.
        ///
        /// ```swift
        /// try await app.asyncShutdown()   // the metrics record once more and stop
        /// ```
        public func shutdownAsync(_ application: Application) async {
            var tasks = application.storage[MetricsRecording.self] ?? [:]
            let recording = tasks.removeValue(forKey: ObjectIdentifier(self))
            application.storage[MetricsRecording.self] = tasks
            recording?.cancel()
            await recording?.value
        }

        /// Stops recording from Vapor's synchronous `shutdown()` (not used in
        /// async code): the task is cancelled and records once more on its
        /// own; nothing waits for it.
        ///
        /// ```swift
        /// defer { app.shutdown() }   // a synchronous main
        /// ```
        public func shutdown(_ application: Application) {
            var tasks = application.storage[MetricsRecording.self] ?? [:]
            tasks.removeValue(forKey: ObjectIdentifier(self))?.cancel()
            application.storage[MetricsRecording.self] = tasks
        }
    }

    /// The recording task of each `LiveQueriesMetrics` of an application.
    private struct MetricsRecording: StorageKey {
        typealias Value = [ObjectIdentifier: Task<Void, Never>]
    }
#endif
