import DBWatch
import DBWatchDelivery
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
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
    /// - A comment line every `LiveQueriesConfiguration.keepAliveInterval`
    ///   while idle.
    /// - Graceful shutdown ends the stream with `event: end`
    ///   (`{"reason":"shutdown"}`); so does a closed database, after its error.
    /// - Refused with a JSON 503 when the server shuts down or the database
    ///   is closed, and with a 503 and `Retry-After` when it would start more
    ///   than `LiveQueriesConfiguration.maxObservations` shared observations
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
    /// JSON (see `JSONEncodedValue`); otherwise as for an `Encodable` value.
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
        events(request, for: httpRequest, context: context, scope: scope, encode: Self.encodeOwnJSON)
    }

    private func events<R: Queryable>(
        _ request: R,
        for httpRequest: Request,
        context: some RequestContext,
        scope: (any Hashable & Sendable)?,
        encode: @escaping @Sendable (R.Value) throws -> [UInt8]
    ) -> Response {
        let admission = eventStream(
            request, scope: scope, lastEventID: httpRequest.headers[Self.lastEventID], logger: context.logger,
            encode: encode)
        let stream: EventStreamSession<R>
        switch admission {
        case .refused(let answer): return Response(answer)
        case .accepted(let accepted): stream = accepted
        }
        // The server's graceful shutdown ends every stream through one task
        // of the LiveQueries, not a registration per stream (whose async
        // frame each connection's task would keep).
        watchServerShutdown()
        return Response(
            status: .ok, headers: HTTPFields(EventStreamSession<R>.headers),
            body: ResponseBody { writer in
                try await httpRequest.body.consumeWithInboundCloseHandler { _ in
                    try await stream.run { frame in try await writer.write(frame.byteBuffer(.serverSentEvents)) }
                } onInboundClosed: {
                    stream.clientLeft()
                }
                try await writer.finish(nil)
            })
    }

    /// Starts, once, the task that waits for the graceful shutdown of the
    /// server whose request task calls this (ServiceLifecycle's, which the
    /// new task inherits) and then ends every stream with its final event
    /// (`endStreams()`), before the server waits for its connections.
    func watchServerShutdown() {
        watchShutdown {
            Task { [weak self] in
                do { try await gracefulShutdown() } catch { return }
                self?.endStreams()
            }
        }
    }

    static let lastEventID = HTTPField.Name("Last-Event-ID")!
}
