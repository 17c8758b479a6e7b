import DBWatch
import Logging

extension LiveQueries {
    /// Keep-alives and stall detection, until the calling task is cancelled.
    /// An adapter runs it with its framework's lifecycle, then calls
    /// ``shutDown()``.
    package func runHousekeeping() async {
        let interval = configuration.housekeepingInterval
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { break }
            housekeep()
        }
    }

    /// One pass over the clients: keep-alives, stalls, shutdown grace.
    private func housekeep() {
        let clients = state.withLock { Array($0.clients.values) }
        let now = ContinuousClock.now
        for client in clients where client.housekeep(now: now, configuration: configuration) {
            counters.clientsStalled.add(1, ordering: .relaxed)
            logger.info("Disconnecting a live query client that made no progress")
        }
    }

    /// The first step of a graceful shutdown: new clients are refused and
    /// every stream ends with its final `end` event. For frameworks that
    /// announce a shutdown before they wait for open connections.
    package func beginShutdown() {
        let clients = state.withLock { state in
            if state.phase == .running { state.phase = .shuttingDown }
            return Array(state.clients.values)
        }
        for client in clients { client.finish(.shutdown) }
    }

    /// The server's graceful shutdown, once for all streams: every stream
    /// ends with its final `end` event, and so does at once every stream
    /// that starts later (its final event alone); new requests are still
    /// answered. Called by the task of ``watchShutdown(_:)``, before the
    /// server waits for its open connections.
    package func endStreams() {
        let clients = state.withLock { state in
            state.streamsEnded = true
            return Array(state.clients.values)
        }
        for client in clients { client.finish(.shutdown) }
    }

    /// Starts, with `start`, the one task that waits for the server's
    /// graceful shutdown and then calls ``endStreams()``, unless it runs
    /// already: an adapter calls this for each stream, from the stream's
    /// task, whose framework's shutdown the new task sees. One task for
    /// all the streams, instead of a registration per stream with the
    /// framework's shutdown; ``shutDown()`` (or the end of the
    /// `LiveQueries`) cancels it.
    package func watchShutdown(_ start: () -> Task<Void, Never>) {
        state.withLock { state in
            guard state.shutdownWatch == nil, state.phase == .running, !state.streamsEnded else { return }
            state.shutdownWatch = start()
        }
    }

    /// Graceful shutdown: ends every stream with a final event, gives writes
    /// in progress ``LiveQueriesConfiguration/shutdownWriteGrace``, kills the
    /// clients left, stops the observations, and closes the database unless
    /// the configuration says not to.
    package func shutDown() async {
        beginShutdown()
        state.withLock { $0.shutdownWatch.take() }?.cancel()
        let observations = state.withLock { Array($0.observations.values) }
        // Streams blocked on a client that does not read get the grace period.
        let deadline = ContinuousClock.now + configuration.shutdownWriteGrace
        while counters.clientsConnected.load(ordering: .relaxed) > 0, ContinuousClock.now < deadline,
            !Task.isCancelled
        {
            try? await Task.sleep(for: configuration.housekeepingInterval)
        }
        for client in state.withLock({ Array($0.clients.values) }) { client.kill() }
        for observation in observations {
            if let task = observation.takeTask() {
                task.cancel()
                await task.value
            }
        }
        await stopSyncFeeds()
        if configuration.closesDatabaseOnShutdown {
            // The async close: the blocking close runs on a thread of the
            // core's, not on a cooperative one.
            await database.close()
            state.withLock { $0.databaseClosed = true }
        }
        state.withLock { $0.phase = .stopped }
        logger.debug("Live queries stopped")
    }
}
