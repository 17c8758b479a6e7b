import DBWatch
import Logging

extension LiveQueries {
    /// Whether a stream of `request` in `scope` would be refused now: the
    /// answer before a stream starts (``subscribe(_:to:scope:logger:replacing:encode:)``
    /// decides again, under the same lock, when it starts).
    package func admission(of request: some Queryable, scope: (any Hashable & Sendable)?) -> LiveQueriesError? {
        if let refusal = refusal() { return refusal }
        let key = SubscriptionKey(request: AnyHashable(request), scope: scope.map { AnyHashable($0) })
        let refused: LiveQueriesError? = state.withLock { state in
            if let observation = state.observations[key], !observation.isFinished { return nil }
            return state.observations.count < configuration.maxObservations ? nil : .tooManyObservations
        }
        if refused != nil { counters.observationsRefused.add(1, ordering: .relaxed) }
        return refused
    }

    /// Subscribes `client` to the shared observation of `request` in
    /// `scope`, starting it for the first client; throws
    /// ``LiveQueriesError/tooManyObservations`` when that would make more than
    /// ``LiveQueriesConfiguration/maxObservations``. An observation the
    /// client is about to leave (`replacing`, a WebSocket's previous
    /// request), of which it is the only client, does not count.
    func subscribe<R: Queryable>(
        _ client: ClientMailbox, to request: R, scope: (any Hashable & Sendable)?, logger: Logger,
        replacing previous: SharedObservation? = nil, encode: @escaping @Sendable (R.Value) throws -> [UInt8]
    ) throws(LiveQueriesError) -> SharedObservation {
        let key = SubscriptionKey(request: AnyHashable(request), scope: scope.map { AnyHashable($0) })
        // Attached under the registry's lock: the last client of a shared
        // observation cannot remove it between the lookup and the attach.
        let attached: (SharedObservation, Bool, (Frame?, ClientMailbox.Finish?))? = state.withLock { state in
            if let observation = state.observations[key], !observation.isFinished {
                return (observation, false, observation.attach(client))
            }
            // A finished observation still listed is replaced: it does not count twice.
            var others = state.observations.count - (state.observations[key] == nil ? 0 : 1)
            if let previous, state.observations[previous.key] === previous, previous.hasOnly(client) { others -= 1 }
            guard others < configuration.maxObservations else { return nil }
            let observation = SharedObservation(key: key)
            state.observations[key] = observation
            return (observation, true, observation.attach(client))
        }
        guard let attached else {
            counters.observationsRefused.add(1, ordering: .relaxed)
            throw .tooManyObservations
        }
        let (observation, isNew, initial) = attached
        observation.deliver(initial, to: client)
        if isNew {
            observation.setTask(
                Task { [self] in await observe(request, sharedBy: observation, logger: logger, encode: encode) })
        }
        return observation
    }

    /// Unsubscribes `client`; the last client stops the observation.
    func unsubscribe(_ client: ClientMailbox, from observation: SharedObservation) {
        let task: Task<Void, Never>? = state.withLock { state in
            let task = observation.remove(client)
            if observation.isEmpty, state.observations[observation.key] === observation {
                state.observations[observation.key] = nil
            }
            return task
        }
        task?.cancel()
    }

    /// Counts a client in, unless the server shuts down (its stream is then
    /// the final `end` event alone).
    func register(_ client: ClientMailbox) -> Bool {
        let registered = state.withLock { state in
            guard state.phase == .running, !state.streamsEnded else { return false }
            state.clients[ObjectIdentifier(client)] = client
            return true
        }
        if registered { counters.clientsConnected.add(1, ordering: .relaxed) }
        return registered
    }

    func unregister(_ client: ClientMailbox) {
        let removed = state.withLock { $0.clients.removeValue(forKey: ObjectIdentifier(client)) != nil }
        if removed { counters.clientsConnected.subtract(1, ordering: .relaxed) }
    }

    /// The shared observation: encode each value once, publish it to every
    /// client. The core has already dropped a value equal to the last one
    /// when `Value` is `Equatable`; otherwise equal bytes are dropped here.
    private func observe<R: Queryable>(
        _ request: R, sharedBy shared: SharedObservation, logger: Logger,
        encode: @Sendable (R.Value) throws -> [UInt8]
    ) async {
        let comparesValues = R.Value.self is any Equatable.Type
        var previous: UInt64?
        var isFirst = true
        var results = database.observe(request, options: configuration.observationOptions).results.makeAsyncIterator()
        while let element = await results.nextPositioned() {
            guard let result = element.result else { continue }
            counters.fetches.add(1, ordering: .relaxed)
            switch result {
            case .success(let value):
                let json: [UInt8]
                do {
                    json = try encode(value)
                } catch {
                    logger.warning(
                        "Live query value could not be encoded",
                        metadata: ["request": "\(request)", "error": "\(error)"])
                    previous = nil
                    publish(.error(ErrorBody(message: "the value could not be encoded")), to: shared)
                    continue
                }
                let version = versions.add(1, ordering: .relaxed).newValue
                // A refetch's value is news of the commit at its position
                // (the first value is no commit's news): clients that
                // followed this observation before that commit count its latency.
                let frame = Frame.value(
                    json: json, version: version,
                    committedAt: isFirst ? nil : database.commitInstant(at: element.position))
                isFirst = false
                if !comparesValues {
                    if frame.digest == previous { continue }
                    previous = frame.digest
                }
                publish(frame, to: shared)
            case .failure(let error):
                previous = nil
                if (error as? SQLiteError)?.isDatabaseClosed == true {
                    state.withLock { $0.databaseClosed = true }
                    publish(.error(ErrorBody(error)), to: shared)
                    shared.finishAll(.databaseClosed)
                    return
                }
                if error is DatabaseFileReplacedError {
                    // Every later fetch would read the old file or fail:
                    // the streams end, new clients are refused.
                    state.withLock { $0.databaseReplaced = true }
                    publish(.error(ErrorBody(error)), to: shared)
                    shared.finishAll(.databaseReplaced)
                    return
                }
                if Task.isCancelled { return }
                // Not logged here: the core logs a failing observation at
                // warning level with the request's description (once per
                // failure, and its recovery), through the database's logger.
                publish(.error(ErrorBody(error)), to: shared)
            }
        }
    }

    private func publish(_ frame: Frame, to shared: SharedObservation) {
        let replaced = shared.publish(frame)
        if replaced > 0 { counters.valuesSkipped.add(replaced, ordering: .relaxed) }
    }
}
