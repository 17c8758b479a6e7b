import Foundation
import DBWatch
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle

extension LiveQueries {
    /// A server-sent events stream of `request`: the current value at once,
    /// then one event per new value.
    ///
    /// ```swift
    /// router.get("leaderboard/events") { request, context in
    ///     live.events(TopPlayers(), for: request, context: context)
    /// }
    /// // id: 7-9f1c…        the version of the value, then a digest of it
    /// // data: [{"name":"Arthur","score":100}]
    /// ```
    ///
    /// - `data:` is the value as JSON, `id:` a version that grows with each
    ///   value. A client that reconnects with `Last-Event-ID` equal to the
    ///   value it holds receives nothing until the value changes.
    /// - A failing fetch is an `event: error` with `{"message", "code"}` (the
    ///   SQLite extended code); the stream goes on and recovers.
    /// - A comment line every ``LiveQueriesConfiguration/keepAliveInterval``
    ///   while idle.
    /// - Graceful shutdown ends the stream with `event: end`
    ///   (`{"reason":"shutdown"}`); so does a closed database, after its error.
    /// - Refused with a JSON 503 when the server shuts down or the database
    ///   is closed, and with a 503 and `Retry-After` when it would start more
    ///   than ``LiveQueriesConfiguration/maxObservations`` shared observations
    ///   (if the cap fills between the answer's head and its first event, the
    ///   stream is an `error` event then `event: end`).
    ///
    /// - Parameters:
    ///   - request: the observed request; its value is encoded as JSON once per change.
    ///   - httpRequest: the HTTP request, whose closing ends the subscription.
    ///   - context: the request context, whose logger is used.
    ///   - scope: what clients must also share to share one observation, for
    ///     example the user id an app derives from the request for authorization.
    public func events<R: Queryable>(
        _ request: R,
        for httpRequest: Request,
        context: some RequestContext,
        scope: (any Hashable & Sendable)? = nil
    ) -> Response where R.Value: Encodable {
        events(request, for: httpRequest, context: context, scope: scope, encode: Self.encodeJSON)
    }

    /// A server-sent events stream of `request` whose value writes its own
    /// JSON (see ``JSONEncodedValue``); otherwise as for an `Encodable` value.
    ///
    /// ```swift
    /// router.get("rows/events") { request, context in live.events(RowsQuery(), for: request, context: context) }
    /// ```
    ///
    /// - Parameters:
    ///   - request: the observed request; its value's JSON is made once per change.
    ///   - httpRequest: the HTTP request, whose closing ends the subscription.
    ///   - context: the request context, whose logger is used.
    ///   - scope: what clients must also share to share one observation.
    public func events<R: Queryable>(
        _ request: R,
        for httpRequest: Request,
        context: some RequestContext,
        scope: (any Hashable & Sendable)? = nil
    ) -> Response where R.Value: JSONEncodedValue {
        events(request, for: httpRequest, context: context, scope: scope, encode: { try $0.encodedJSON() })
    }

    private func events<R: Queryable>(
        _ request: R,
        for httpRequest: Request,
        context: some RequestContext,
        scope: (any Hashable & Sendable)?,
        encode: @escaping @Sendable (R.Value) throws -> Data
    ) -> Response {
        if let refusal = admission(of: request, scope: scope) {
            return errorResponse(refusal, request: request, logger: context.logger)
        }
        let skipDigest = httpRequest.headers[Self.lastEventID].flatMap(Frame.digest(ofEventID:))
        let logger = context.logger
        let headers: HTTPFields = [
            .contentType: "text/event-stream",
            .cacheControl: "no-cache",
            Self.accelBuffering: "no",
        ]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { [self] writer in
                let client = ClientMailbox(skipDigest: skipDigest, keepsAlive: true)
                guard register(client) else {
                    try await writer.write(Frame.end(reason: "shutdown").serverSentEvent)
                    try await writer.finish(nil)
                    return
                }
                defer { unregister(client) }
                let observation: SharedObservation
                do {
                    observation = try subscribe(client, to: request, scope: scope, logger: logger, encode: encode)
                } catch {
                    // Refused after the 200 went out (the cap filled in between): the error, then the end.
                    try await writer.write(Frame.error(ErrorBody(error)).serverSentEvent)
                    try await writer.write(Frame.end(reason: "too many observations").serverSentEvent)
                    try await writer.finish(nil)
                    return
                }
                defer { unsubscribe(client, from: observation) }
                logger.debug("Live query client connected", metadata: ["request": "\(request)"])
                let box = WriterBox(writer)
                do {
                    try await httpRequest.body.consumeWithInboundCloseHandler { _ in
                        try await withGracefulShutdownHandler {
                            try await client.run(
                                keepAlive: Frame.keepAlive, bytes: \.serverSentEvent, counters: counters,
                                write: { try await box.write($0) })
                        } onGracefulShutdown: {
                            client.finish(.shutdown)
                        }
                    } onInboundClosed: {
                        client.finish(.disconnected)
                    }
                } catch {
                    logger.debug(
                        "Live query client gone",
                        metadata: [
                            "request": "\(request)", "reason": "\(client.finishReason.map { "\($0)" } ?? "\(error)")",
                        ])
                    throw error
                }
                logger.debug("Live query stream ended", metadata: ["request": "\(request)"])
                try await box.finish()
            })
    }

    static let lastEventID = HTTPField.Name("Last-Event-ID")!
    static let accelBuffering = HTTPField.Name("X-Accel-Buffering")!
}

/// The response writer, handed to the child task that writes while the
/// connection's task waits for it.
final class WriterBox: @unchecked Sendable {
    // @unchecked: used by one task at a time: the write loop's child task
    // while the connection task awaits it, then the connection task alone.
    private var writer: any ResponseBodyWriter

    init(_ writer: any ResponseBodyWriter) {
        self.writer = writer
    }

    func write(_ buffer: ByteBuffer) async throws {
        try await writer.write(buffer)
    }

    func finish() async throws {
        let writer = writer
        try await writer.finish(nil)
    }
}
