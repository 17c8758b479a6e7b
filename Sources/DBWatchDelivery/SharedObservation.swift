import DBWatch

/// What clients of one shared observation have in common: an equal request
/// and an equal scope.
struct SubscriptionKey: Hashable, @unchecked Sendable {
    // @unchecked: both are built only from Sendable values (a Queryable, a Sendable scope).
    let request: AnyHashable
    let scope: AnyHashable?
}

/// One observation shared by every client of one request and scope: one
/// fetch and one encoding per change, the same frame offered to each client.
final class SharedObservation: Sendable {
    private struct State {
        var clients: [ObjectIdentifier: ClientMailbox] = [:]
        /// The last frame published: what a new client receives first.
        var current: Frame?
        var task: Task<Void, Never>?
        /// Set when the observation ended on its own (database closed).
        var finish: ClientMailbox.Finish?
    }

    let key: SubscriptionKey
    private let state = Locked(State())

    init(key: SubscriptionKey) {
        self.key = key
    }

    var id: ObjectIdentifier { ObjectIdentifier(self) }

    var isEmpty: Bool { state.withLock { $0.clients.isEmpty } }

    var isFinished: Bool { state.withLock { $0.finish != nil } }

    /// Whether `client` is this observation's only client.
    func hasOnly(_ client: ClientMailbox) -> Bool {
        state.withLock { $0.clients.count == 1 && $0.clients[ObjectIdentifier(client)] != nil }
    }

    /// Adds a client; returns what it must be given at once (the current
    /// frame, the end of a finished observation), to deliver with
    /// ``deliver(_:to:)`` outside the caller's lock.
    func attach(_ client: ClientMailbox) -> (Frame?, ClientMailbox.Finish?) {
        client.accept(from: id)
        return state.withLock { state in
            state.clients[ObjectIdentifier(client)] = client
            return (state.current, state.finish)
        }
    }

    /// Gives a new client what ``attach(_:)`` returned.
    func deliver(_ initial: (Frame?, ClientMailbox.Finish?), to client: ClientMailbox) {
        if let current = initial.0 { client.offer(current, from: id) }
        if let finish = initial.1 { client.finish(finish) }
    }

    /// Removes a client; returns the observation's task when it was the last.
    func remove(_ client: ClientMailbox) -> Task<Void, Never>? {
        state.withLock { state in
            state.clients[ObjectIdentifier(client)] = nil
            guard state.clients.isEmpty else { return nil }
            defer { state.task = nil }
            return state.task
        }
    }

    func setTask(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state in
            if state.clients.isEmpty { return true }
            state.task = task
            return false
        }
        if cancelNow { task.cancel() }
    }

    /// Takes the task, for shutdown.
    func takeTask() -> Task<Void, Never>? {
        state.withLock { state in
            defer { state.task = nil }
            return state.task
        }
    }

    /// Offers `frame` to every client; returns how many pending frames it replaced.
    func publish(_ frame: Frame) -> Int {
        let clients = state.withLock { state in
            state.current = frame
            return Array(state.clients.values)
        }
        var replaced = 0
        for client in clients where client.offer(frame, from: id) { replaced += 1 }
        return replaced
    }

    /// Ends every client's stream: the observation is over.
    func finishAll(_ reason: ClientMailbox.Finish) {
        let clients = state.withLock { state in
            state.finish = reason
            return Array(state.clients.values)
        }
        for client in clients { client.finish(reason) }
    }
}
