import DBWatch
import Logging

/// What an adapter drives for one server-sent events stream: decided
/// before the answer's head (``LiveQueries/eventStream(_:scope:lastEventID:logger:encode:)``),
/// run in the answer's body.
///
/// ```swift
/// switch live.eventStream(request, scope: nil, lastEventID: lastEventID, logger: logger, encode: LiveQueries.encodeJSON) {
/// case .refused(let answer): return response(answer)
/// case .accepted(let stream):
///     return streamingResponse(headers: EventStreamSession.headers) { writer in
///         // the framework calls stream.clientLeft() when the client goes away; on its
///         // graceful shutdown, live.endStreams() ends every stream (or stream.shutDown() this one)
///         try await stream.run { frame in try await writer.write(frame.wire(.serverSentEvents, makeBuffer)) }
///     }
/// }
/// ```
package struct EventStreamSession<Request: Queryable>: Sendable {
    /// The decision before the answer's head.
    package enum Admission: Sendable {
        /// A 200 with ``EventStreamSession/headers``, whose body runs the stream.
        case accepted(EventStreamSession)
        /// An error answer instead.
        case refused(HTTPAnswer)
    }

    /// The head of an accepted stream.
    package static var headers: [(name: String, value: String)] {
        [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")]
    }

    let live: LiveQueries
    let request: Request
    let scope: (any Hashable & Sendable)?
    let logger: Logger
    let encode: @Sendable (Request.Value) throws -> [UInt8]
    let client: ClientMailbox

    /// Runs the stream until it ends: the current value at once, then each
    /// new one; throws when the client must be disconnected (it went away,
    /// stalled, or a write failed).
    ///
    /// Only the wait and the writes are async here: what comes before and
    /// after runs in ``start()`` and ``end(_:error:)``, which are not
    /// inlined, so that this function's async frame, which the connection's
    /// task keeps for as long as the stream lasts, holds a few references
    /// (1,424 bytes when the logging and the subscription were inlined here).
    package func run(write: (Frame) async throws -> Void) async throws {
        guard let observation = start() else {
            try await write(.end(.shutdown))
            return
        }
        do {
            try await client.run(counters: live.counters, write: write)
        } catch {
            end(observation, error: error)
            throw error
        }
        end(observation, error: nil)
    }

    /// Registers and subscribes the client; nil when the server shuts down
    /// (the stream is then its final event alone). A subscription refused
    /// after the 200 went out (the cap filled in between) leaves the error,
    /// then the end, to write.
    @inline(never)
    private func start() -> SharedObservation?? {
        guard live.register(client) else { return nil }
        do {
            let observation = try live.subscribe(client, to: request, scope: scope, logger: logger, encode: encode)
            logger.debug(
                "Live query client connected", metadata: [LogKey.request: "\(request)", LogKey.transport: "sse"])
            return .some(observation)
        } catch {
            client.offer(.error(ErrorBody(error)))
            client.finish(.refused)
            return .some(nil)
        }
    }

    /// Unsubscribes and unregisters the client once its loop ended, with
    /// `error` when it must be disconnected.
    @inline(never)
    private func end(_ observation: SharedObservation?, error: (any Error)?) {
        if let error {
            let reason = client.finishReason.map { "\($0)" } ?? "\(error)"
            logger.debug(
                "Live query client left",
                metadata: [LogKey.request: "\(request)", LogKey.transport: "sse", LogKey.reason: "\(reason)"])
        } else {
            logger.debug(
                "Live query client left",
                metadata: [LogKey.request: "\(request)", LogKey.transport: "sse", LogKey.reason: "stream ended"])
        }
        if let observation { live.unsubscribe(client, from: observation) }
        live.unregister(client)
    }

    /// The client went away (the framework saw its connection close): the
    /// stream ends at once.
    package func clientLeft() {
        client.finish(.disconnected)
    }

    /// Graceful shutdown: the stream ends with its final `end` event.
    package func shutDown() {
        client.finish(.shutdown)
    }
}

extension LiveQueries {
    /// Decides on a server-sent events stream of `request`: refused with an
    /// error answer (the server shuts down, the database is closed, too many
    /// observations), or accepted. `lastEventID` is the client's
    /// `Last-Event-ID`: a client that holds the current value receives
    /// nothing until it changes.
    package func eventStream<R: Queryable>(
        _ request: R, scope: (any Hashable & Sendable)?, lastEventID: String?, logger: Logger,
        encode: @escaping @Sendable (R.Value) throws -> [UInt8]
    ) -> EventStreamSession<R>.Admission {
        if let refusal = admission(of: request, scope: scope) {
            return .refused(errorAnswer(refusal, request: request, logger: logger))
        }
        let client = ClientMailbox(
            heldDigest: lastEventID.flatMap(Frame.digest(ofEventID:)), transport: .serverSentEvents)
        return .accepted(
            EventStreamSession(
                live: self, request: request, scope: scope, logger: logger, encode: encode, client: client))
    }
}
