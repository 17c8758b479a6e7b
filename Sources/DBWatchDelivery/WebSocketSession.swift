import DBWatch
import Foundation
import Logging

/// What an adapter drives for one WebSocket connection: each message the
/// client sends is decoded as `Message`, turned into the observed request by
/// the route's hook, and subscribed to, replacing the previous one; values,
/// errors and the final `end` go out as text messages.
///
/// ```swift
/// let session = live.webSocketSession(receiving: Filter.self, scope: user.id, logger: logger) { filter in
///     Todos(owner: user.id, done: filter.done)
/// }
/// // one task: for each inbound message, await session.receive(bytes); then session.clientLeft()
/// // the connection's task: try await session.run { frame in try await send(text: frame.wire(.webSocket, makeBuffer)) }
/// ```
package final class WebSocketSession<Message: Decodable & Sendable, Request: Queryable>: Sendable {
    private enum Subscription {
        /// Subscribed to this observation, or to none yet.
        case open(SharedObservation?)
        /// ``run(write:)`` ended: a request decoded late is not subscribed.
        case closed
    }

    private let live: LiveQueries
    private let scope: (any Hashable & Sendable)?
    private let logger: Logger
    private let encode: @Sendable (Request.Value) throws -> [UInt8]
    private let request: @Sendable (Message) async throws -> Request
    private let client = ClientMailbox(heldDigest: nil, transport: .webSocket)
    private let subscription = Locked(Subscription.open(nil))

    init(
        live: LiveQueries, scope: (any Hashable & Sendable)?, logger: Logger,
        encode: @escaping @Sendable (Request.Value) throws -> [UInt8],
        request: @escaping @Sendable (Message) async throws -> Request
    ) {
        self.live = live
        self.scope = scope
        self.logger = logger
        self.encode = encode
        self.request = request
    }

    /// A message from the client: decoded, checked by the route's hook, and
    /// subscribed to. A message that does not decode, a refusal of the hook
    /// or of the cap on observations is an error message; the connection
    /// and its current subscription go on.
    package func receive(_ message: Data) async {
        let observed: Request
        do {
            observed = try await request(try JSONDecoder().decode(Message.self, from: message))
        } catch {
            logger.debug(
                "Live query request refused", metadata: [LogKey.transport: "websocket", LogKey.error: "\(error)"])
            client.offer(.error(ErrorBody(refusal: error)))
            return
        }
        let current = subscription.withLock { subscription -> SharedObservation? in
            if case .open(let current) = subscription { return current }
            return nil
        }
        let observation: SharedObservation
        do {
            observation = try live.subscribe(
                client, to: observed, scope: scope, logger: logger, replacing: current, encode: encode)
        } catch {
            logger.debug(
                "Live query request refused",
                metadata: [LogKey.request: "\(observed)", LogKey.transport: "websocket", LogKey.error: "\(error)"])
            client.offer(.error(ErrorBody(error)))
            return
        }
        // The observation left: the previous one, or this one when the
        // connection ended meanwhile.
        let left: SharedObservation? = subscription.withLock { subscription in
            guard case .open(let previous) = subscription else { return observation }
            subscription = .open(observation)
            return previous === observation ? nil : previous
        }
        if let left { live.unsubscribe(client, from: left) }
        logger.debug(
            "Live query WebSocket request", metadata: [LogKey.request: "\(observed)", LogKey.transport: "websocket"])
    }

    /// Runs the connection's writes until it ends; returns when the client
    /// left, throws when a write failed.
    ///
    /// Only the wait and the writes are async here (see
    /// ``EventStreamSession``'s `run`): the registration and the cleanup are
    /// in functions that are not inlined, so that the async frame the
    /// connection's task keeps is a few references.
    package func run(write: (Frame) async throws -> Void) async throws {
        guard live.register(client) else {
            try await write(.end(.shutdown))
            return
        }
        logger.debug("Live query client connected", metadata: [LogKey.transport: "websocket"])
        do {
            try await client.run(counters: live.counters, write: write)
        } catch  where client.finishReason == .disconnected {
            // The client closed the connection: not an error of the handler.
        } catch {
            end()
            throw error
        }
        end()
    }

    /// Unregisters the client and leaves its subscription, once its loop ended.
    @inline(never)
    private func end() {
        logger.debug(
            "Live query client left",
            metadata: [
                LogKey.transport: "websocket", LogKey.reason: "\(client.finishReason.map { "\($0)" } ?? "ended")",
            ])
        live.unregister(client)
        let last = subscription.withLock { subscription -> SharedObservation? in
            defer { subscription = .closed }
            if case .open(let current) = subscription { return current }
            return nil
        }
        if let last { live.unsubscribe(client, from: last) }
    }

    /// The client's side ended (it closed the connection).
    package func clientLeft() {
        client.finish(.disconnected)
    }

    /// Graceful shutdown: the connection ends with its final `end` message.
    package func shutDown() {
        client.finish(.shutdown)
    }
}

extension LiveQueries {
    /// A WebSocket session whose client sends `Message`s, from which
    /// `request` builds (or checks) the observed request.
    package func webSocketSession<Message: Decodable & Sendable, R: Queryable>(
        receiving messageType: Message.Type, scope: (any Hashable & Sendable)?, logger: Logger,
        encode: @escaping @Sendable (R.Value) throws -> [UInt8],
        request: @escaping @Sendable (Message) async throws -> R
    ) -> WebSocketSession<Message, R> {
        WebSocketSession(live: self, scope: scope, logger: logger, encode: encode, request: request)
    }
}
