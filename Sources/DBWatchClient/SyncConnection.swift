import AsyncHTTPClient
import DBWatchDelivery
import Foundation
import Logging
import NIOCore
import Synchronization

// The path of a server message: `run` opens the stream (`connect`) ->
// `ServerSentEventParser` cuts it into events -> `SyncServerMessage` reads
// each -> `receive` stages a batch's entries for every subscription it
// lists (`SyncSubscriber.staged`), commits all of them under one lock, then
// yields one `SyncUpdate` to each subscription's stream -> the public
// sequences (`SyncValues`, `SyncChanges`) decode it.

/// The one connection of a ``SyncClient``: a server-sent events stream
/// (`GET BASE/sync`) with its subscriptions' messages posted beside it
/// (`POST BASE/sync/SESSION`). It opens when a first sequence starts,
/// reconnects with backoff and resumes every subscription from its
/// position, and stops when the last sequence ends or the client closes.
final class SyncConnection: Sendable {
    /// What a subscription's stream receives.
    enum Event: Sendable {
        case update(SyncUpdate)
        /// An error; `isFinal`: the subscription ended with it.
        case failure(SyncClientError, isFinal: Bool)
    }

    /// A client message to post, in the session it was meant for;
    /// `handle`: the subscription a refusal is about.
    struct Post: Sendable {
        let session: String
        let json: Data
        let handle: Int?
        let serverID: String?
    }

    /// The running connection task and what its current stream knows.
    struct Run {
        let id: Int
        var task: Task<Void, Never>?
        /// The session of `hello`, until the stream ends.
        var session: String?
        /// The poster of the current stream.
        var posts: AsyncStream<Post>.Continuation?
        /// Failed attempts since the last `hello`.
        var attempt = 0
    }

    struct State {
        var subscribers: [Int: SyncSubscriber] = [:]
        /// The handle of each id the server knows in the current session.
        var byServerID: [String: Int] = [:]
        var nextHandle = 0
        var nextServerID = 0
        var nextRunID = 0
        var run: Run?
        var isClosed = false
    }

    /// How many bytes the current stream brought: the idle timeout's watch.
    final class Activity: Sendable {
        let bytes = Atomic<Int>(0)
    }

    /// A stream to end and reopen (after the backoff).
    struct Reconnect: Error, CustomStringConvertible {
        let description: String
    }

    let baseURL: String
    let token: String?
    let httpClient: HTTPClient
    let configuration: SyncClientConfiguration
    let logger: Logger
    private let state = Mutex(State())

    init(baseURL: URL, token: String?, httpClient: HTTPClient, configuration: SyncClientConfiguration, logger: Logger) {
        var base = baseURL.absoluteString
        if let query = base.firstIndex(where: { $0 == "?" || $0 == "#" }) { base = String(base[..<query]) }
        if !base.hasSuffix("/") { base += "/" }
        self.baseURL = base
        self.token = token
        self.httpClient = httpClient
        self.configuration = configuration
        self.logger = logger
    }

    // MARK: - Subscriptions

    /// Adds a subscription; its events arrive on the returned stream, kept
    /// as `buffering` says. Starts the connection if it is not running.
    func subscribe(
        _ query: String, params: [String: String],
        buffering: AsyncStream<Event>.Continuation.BufferingPolicy
    ) -> (handle: Int, events: AsyncStream<Event>) {
        let (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: buffering)
        let handle = state.withLock { state -> Int? in
            guard !state.isClosed else { return nil }
            state.nextHandle += 1
            let handle = state.nextHandle
            state.subscribers[handle] = SyncSubscriber(query: query, params: params, continuation: continuation)
            if state.run == nil {
                state.nextRunID += 1
                let id = state.nextRunID
                state.run = Run(id: id)
                state.run?.task = Task { await self.run(id) }
            } else {
                Self.sendSubscribe(handle, &state)
            }
            return handle
        }
        guard let handle else {
            continuation.finish()
            return (0, events)
        }
        // The consuming task was cancelled: the sequence ended.
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(handle) }
        return (handle, events)
    }

    /// Removes a subscription (its sequence ended); the last one stops the
    /// connection.
    func unsubscribe(_ handle: Int) {
        remove(handle, serverID: nil, notifyingServer: true)?.continuation.finish()
    }

    /// Removes `handle` (when its id is still `serverID`, if given) and
    /// returns it; stops the connection when it was the last.
    private func remove(_ handle: Int, serverID: String?, notifyingServer: Bool) -> SyncSubscriber? {
        let (subscriber, task) = state.withLock { state -> (SyncSubscriber?, Task<Void, Never>?) in
            guard let subscriber = state.subscribers[handle], serverID == nil || subscriber.serverID == serverID
            else { return (nil, nil) }
            state.subscribers[handle] = nil
            if let serverID = subscriber.serverID {
                state.byServerID[serverID] = nil
                if notifyingServer { Self.post(["type": "unsubscribe", "id": serverID], handle: nil, &state) }
            }
            guard state.subscribers.isEmpty else { return (subscriber, nil) }
            defer { state.run = nil }
            return (subscriber, state.run?.task)
        }
        task?.cancel()
        return subscriber
    }

    /// Ends every subscription and the connection, and waits for its task.
    func close() async {
        let (subscribers, task) = state.withLock { state in
            state.isClosed = true
            defer {
                state.subscribers = [:]
                state.byServerID = [:]
                state.run = nil
            }
            return (Array(state.subscribers.values), state.run?.task)
        }
        for subscriber in subscribers { subscriber.continuation.finish() }
        task?.cancel()
        await task?.value
    }

    /// Gives `handle` a new id in the current session and posts its
    /// `subscribe` (with its position, if it has one).
    private static func sendSubscribe(_ handle: Int, _ state: inout State) {
        guard let message = subscribeMessage(handle, &state) else { return }
        post(message, handle: handle, &state)
    }

    /// The longest body a DBWatch server takes in `POST /sync/SESSION`.
    static let maximumPostBytes = 64 * 1024

    /// Subscribes every subscription in one array (after a `hello`): the
    /// server handles them together, so they enter one batch, as of one
    /// position. An array longer than ``maximumPostBytes`` goes in parts
    /// (each enters a batch of its own); a message that alone is longer
    /// goes by itself, and its refusal is its subscription's.
    private static func sendSubscribeAll(_ state: inout State) {
        guard let session = state.run?.session, let posts = state.run?.posts else { return }
        var messages: [(handle: Int, serverID: String?, json: Data)] = []
        for handle in state.subscribers.keys.sorted() {
            guard let message = subscribeMessage(handle, &state),
                let json = try? JSONSerialization.data(withJSONObject: message, options: [.sortedKeys])
            else { continue }
            messages.append((handle, message["id"] as? String, json))
        }
        for part in arrayParts(sizes: messages.map(\.json.count), limit: maximumPostBytes) {
            if part.count == 1 {
                let message = messages[part.lowerBound]
                posts.yield(
                    Post(session: session, json: message.json, handle: message.handle, serverID: message.serverID))
                continue
            }
            var json = Data("[".utf8)
            for index in part {
                if index > part.lowerBound { json.append(UInt8(ascii: ",")) }
                json.append(messages[index].json)
            }
            json.append(UInt8(ascii: "]"))
            // Each refusal comes on the stream too, with its subscription's id.
            posts.yield(Post(session: session, json: json, handle: nil, serverID: nil))
        }
    }

    /// Splits messages of these `sizes` (in bytes), in order, into arrays
    /// whose JSON (brackets and commas included) is at most `limit` bytes;
    /// a message longer than that is a part by itself.
    static func arrayParts(sizes: [Int], limit: Int) -> [Range<Int>] {
        var parts: [Range<Int>] = []
        var start = 0
        var size = 2
        for (index, length) in sizes.enumerated() {
            if index > start, size + 1 + length > limit {
                parts.append(start..<index)
                start = index
                size = 2
            }
            size += index > start ? 1 + length : length
        }
        if start < sizes.count { parts.append(start..<sizes.count) }
        return parts
    }

    /// Gives `handle` a new id in the current session; its `subscribe`.
    private static func subscribeMessage(_ handle: Int, _ state: inout State) -> [String: Any]? {
        guard state.run?.session != nil, var subscriber = state.subscribers[handle] else { return nil }
        state.nextServerID += 1
        let serverID = "s\(state.nextServerID)"
        subscriber.serverID = serverID
        subscriber.isSynced = false
        state.subscribers[handle] = subscriber
        state.byServerID[serverID] = handle
        var message: [String: Any] = [
            "type": "subscribe", "id": serverID, "query": subscriber.query, "params": subscriber.params,
        ]
        if let position = subscriber.position { message["position"] = position }
        return message
    }

    /// Unsubscribes `handle`'s current id and subscribes it again.
    private static func resubscribe(_ handle: Int, _ state: inout State) {
        guard let serverID = state.subscribers[handle]?.serverID else { return }
        state.byServerID[serverID] = nil
        post(["type": "unsubscribe", "id": serverID], handle: nil, &state)
        sendSubscribe(handle, &state)
    }

    /// Queues a message for the current session's poster. Under the lock,
    /// so that messages are posted in the order the state decided them
    /// (a `subscribe` before the `unsubscribe` of the same id); the
    /// poster never takes the lock while the stream holds its own.
    private static func post(_ message: [String: Any], handle: Int?, _ state: inout State) {
        guard let session = state.run?.session, let posts = state.run?.posts,
            let json = try? JSONSerialization.data(withJSONObject: message, options: [.sortedKeys])
        else { return }
        posts.yield(Post(session: session, json: json, handle: handle, serverID: message["id"] as? String))
    }

    /// Ends `handle` with `error` (a refusal): the server does not hold it.
    private func fail(_ handle: Int, serverID: String?, with error: SyncClientError) {
        guard let subscriber = remove(handle, serverID: serverID, notifyingServer: false) else { return }
        subscriber.continuation.yield(.failure(error, isFinal: true))
        subscriber.continuation.finish()
    }

    // MARK: - The connection

    /// Opens the stream, and again after each end, with backoff, until
    /// cancelled.
    private func run(_ id: Int) async {
        while !Task.isCancelled {
            do {
                try await connect(id)
            } catch let refusal as SyncClientError {
                // The server refuses this client (a token, a host): final.
                logger.debug("Sync connection refused", metadata: ["error": "\(refusal)"])
                let subscribers = state.withLock { state -> [SyncSubscriber] in
                    guard state.run?.id == id else { return [] }
                    defer {
                        state.subscribers = [:]
                        state.byServerID = [:]
                        state.run = nil
                    }
                    return Array(state.subscribers.values)
                }
                for subscriber in subscribers {
                    subscriber.continuation.yield(.failure(refusal, isFinal: true))
                    subscriber.continuation.finish()
                }
                return
            } catch {
                if !Task.isCancelled { logger.debug("Sync connection lost", metadata: ["error": "\(error)"]) }
            }
            let attempt = state.withLock { state -> Int? in
                guard state.run?.id == id else { return nil }
                state.run?.session = nil
                state.run?.posts = nil
                state.byServerID = [:]
                for handle in state.subscribers.keys { state.subscribers[handle]?.serverID = nil }
                defer { state.run?.attempt += 1 }
                return state.run?.attempt
            }
            guard let attempt, !Task.isCancelled else { return }
            let delay = configuration.delay(attempt: attempt, random: Double.random(in: 0...1))
            logger.debug("Sync client reconnecting", metadata: ["delay": "\(delay)"])
            do {
                try await Self.sleep(on: configuration.clock, for: delay)
            } catch {
                return
            }
        }
    }

    private static func sleep<C: Clock<Duration>>(on clock: C, for duration: Duration) async throws {
        try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil)
    }

    /// One stream, until it ends: throws ``SyncClientError`` when the
    /// server refuses it for good, any other error when it is lost.
    private func connect(_ id: Int) async throws {
        var request = HTTPClientRequest(url: baseURL + "sync")
        request.headers.add(name: "Accept", value: "text/event-stream")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        let response = try await httpClient.execute(request, timeout: .hours(24 * 366))
        guard response.status == .ok else {
            let error = await Self.answerError(response)
            switch response.status.code {
            case 400, 401, 403, 404, 421: throw error
            default: throw Reconnect(description: "\(error)")
            }
        }
        guard response.headers.first(name: "Content-Type")?.hasPrefix("text/event-stream") == true else {
            throw SyncClientError(
                kind: .badServerMessage, message: "GET \(baseURL)sync did not answer with server-sent events")
        }
        let (posts, poster) = AsyncStream.makeStream(of: Post.self)
        defer { poster.finish() }
        let activity = Activity()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.read(response.body, run: id, poster: poster, activity: activity) }
            group.addTask { try await self.post(posts) }
            if let idleTimeout = configuration.idleTimeout {
                group.addTask {
                    var seen = activity.bytes.load(ordering: .relaxed)
                    while true {
                        try await Task.sleep(for: idleTimeout)
                        let now = activity.bytes.load(ordering: .relaxed)
                        if now == seen { throw Reconnect(description: "no byte for \(idleTimeout)") }
                        seen = now
                    }
                }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Reads the stream's events until it ends, an `end`, or an error
    /// about the connection.
    private func read(
        _ body: HTTPClientResponse.Body, run id: Int, poster: AsyncStream<Post>.Continuation,
        activity: Activity
    ) async throws {
        var parser = ServerSentEventParser()
        for try await chunk in body {
            activity.bytes.add(chunk.readableBytes, ordering: .relaxed)
            for event in try parser.feed(chunk.readableBytesView) {
                let message: SyncServerMessage
                do {
                    message = try SyncServerMessage(event: event.type, json: Array(event.data.utf8))
                } catch {
                    throw Reconnect(description: "a message that is not the protocol's: \(error)")
                }
                try receive(message, run: id, poster: poster)
            }
        }
    }

    // MARK: - Server messages

    /// Handles one server message; throws to end the stream.
    private func receive(
        _ message: SyncServerMessage, run id: Int, poster: AsyncStream<Post>.Continuation
    ) throws {
        switch message {
        case .hello(let version, let session, _):
            guard version == 1 else {
                throw Reconnect(description: "the server speaks protocol \(version ?? 0), not 1")
            }
            state.withLock { state in
                guard state.run?.id == id else { return }
                state.run?.session = session
                state.run?.posts = poster
                state.run?.attempt = 0
                state.byServerID = [:]
                Self.sendSubscribeAll(&state)
            }
            logger.debug("Sync client connected", metadata: ["session": "\(session)"])
        case .batch(let position, let entries):
            apply(entries, at: position, run: id)
        case .error(let serverID?, let position, let error):
            let handle = state.withLock { $0.byServerID[serverID] }
            guard let handle else { return }
            if position == nil {
                // A refusal of a server that goes away is not final: the
                // stream ends, and the next one subscribes again.
                guard !Self.isPassing(error) else { return }
                fail(handle, serverID: serverID, with: error)
            } else {
                let continuation = state.withLock { $0.subscribers[handle]?.continuation }
                continuation?.yield(.failure(error, isFinal: false))
            }
        case .error(nil, _, let error):
            throw Reconnect(description: "the server's error: \(error)")
        case .end(let reason):
            throw Reconnect(description: "the server ended the stream (\(reason ?? "no reason"))")
        case .other:
            return
        }
    }

    /// Applies a batch to all its subscriptions or to none: staged first,
    /// then committed under one lock, then delivered.
    private func apply(_ entries: [(id: String, entry: SyncEntry)], at position: String, run id: Int) {
        let deliveries = state.withLock { state -> [(AsyncStream<Event>.Continuation, SyncUpdate)] in
            guard state.run?.id == id, state.run?.session != nil else { return [] }
            var staged: [(handle: Int, subscriber: SyncSubscriber, update: SyncUpdate)] = []
            var misfits: [Int] = []
            for (serverID, entry) in entries {
                guard let handle = state.byServerID[serverID], let subscriber = state.subscribers[handle] else {
                    continue
                }
                do {
                    let (next, update) = try subscriber.staged(entry, at: position)
                    staged.append((handle, next, update))
                } catch {
                    logger.debug("Sync changes that do not fit", metadata: ["error": "\(error)"])
                    misfits.append(handle)
                }
            }
            guard misfits.isEmpty else {
                // None is applied: the misfits have lost their state, the
                // others resume from their own positions.
                for handle in misfits {
                    state.subscribers[handle]?.position = nil
                    state.subscribers[handle]?.rows = nil
                    Self.resubscribe(handle, &state)
                }
                for item in staged { Self.resubscribe(item.handle, &state) }
                return []
            }
            for item in staged { state.subscribers[item.handle] = item.subscriber }
            for handle in state.subscribers.keys where state.subscribers[handle]?.isSynced == true {
                state.subscribers[handle]?.position = position
            }
            return staged.map { (state.subscribers[$0.handle]!.continuation, $0.update) }
        }
        for (continuation, update) in deliveries { continuation.yield(.update(update)) }
    }

    // MARK: - Client messages

    /// Posts the messages one after the other; throws to reconnect.
    private func post(_ posts: AsyncStream<Post>) async throws {
        for await post in posts {
            guard state.withLock({ $0.run?.session == post.session }) else { continue }
            var request = HTTPClientRequest(url: baseURL + "sync/" + post.session)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
            request.body = .bytes(ByteBuffer(bytes: post.json))
            let response = try await httpClient.execute(request, timeout: .seconds(30))
            if response.status == .accepted || response.status == .ok {
                _ = try await response.body.collect(upTo: 64 * 1024)
                continue
            }
            let error = await Self.answerError(response)
            if error.reason == "unknownSession" {
                // The stream ended (the next one subscribes again), or the
                // server no longer takes this session's messages while its
                // stream is open: reconnect, and subscribe again there.
                guard state.withLock({ $0.run?.session == post.session }) else { continue }
                throw Reconnect(description: "the server does not know the session: \(error)")
            }
            if Self.isPassing(error) || response.status.code >= 500 && error.reason == nil {
                throw Reconnect(description: "a message refused: \(error)")
            }
            if let handle = post.handle { fail(handle, serverID: post.serverID, with: error) }
        }
    }

    /// Whether a refusal is about the server, not the subscription: it
    /// shuts down, its database closed or was replaced, or it observes as
    /// many queries as it may for now (a 503 with `Retry-After`). The
    /// client reconnects after its backoff (to this node or another)
    /// instead of giving up.
    static func isPassing(_ error: SyncClientError) -> Bool {
        guard let reason = error.reason else { return false }
        return ["shuttingDown", "databaseClosed", "databaseReplaced", "tooManyObservations"].contains(reason)
    }

    /// The refusal an error answer stands for.
    private static func answerError(_ response: HTTPClientResponse) async -> SyncClientError {
        let body = try? await response.body.collect(upTo: 64 * 1024)
        return SyncServerMessage.error(
            kind: .refused, body: body.map { Data($0.readableBytesView) }, status: Int(response.status.code))
    }
}
