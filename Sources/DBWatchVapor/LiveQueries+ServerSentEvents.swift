#if Vapor
    import DBWatch
    import NIOCore
    import Synchronization
    import Vapor

    extension LiveQueries {
        /// A server-sent events stream of `request`: the current value at
        /// once, then one event per new value.
        ///
        /// ```swift
        /// app.get("leaderboard", "events") { request in live.events(TopPlayers(), for: request) }
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
        ///   while idle; a client that reads nothing for
        ///   ``LiveQueriesConfiguration/stalledClientTimeout`` is disconnected.
        /// - A client that disconnects ends its subscription within
        ///   ``disconnectCheckInterval``: Vapor tells a route of no closed
        ///   connection, so an empty write probes it.
        /// - Graceful shutdown ends the stream with `event: end`
        ///   (`{"reason":"shutdown"}`); so does a closed database, after its error.
        /// - Refused with a JSON 503 when the server shuts down or the database
        ///   is closed, and with a 503 and `Retry-After` when it would start more
        ///   than ``LiveQueriesConfiguration/maxObservations`` shared observations.
        ///
        /// - Parameters:
        ///   - request: the observed request; its value is encoded as JSON once per change.
        ///   - httpRequest: the HTTP request (its `Last-Event-ID`, its logger).
        ///   - scope: what clients must also share to share one observation, for
        ///     example the user id an app derives from the request for authorization.
        public func events<R: Queryable>(
            _ request: R, for httpRequest: Request, scope: (any Hashable & Sendable)? = nil
        ) -> Response where R.Value: Encodable {
            events(request, for: httpRequest, scope: scope, encode: Self.encodeJSON)
        }

        /// A server-sent events stream of `request` whose value writes its own
        /// JSON (see ``JSONEncodedValue``); otherwise as for an `Encodable` value.
        ///
        /// ```swift
        /// app.get("rows", "events") { request in live.events(RowsQuery(), for: request) }
        /// ```
        ///
        /// - Parameters:
        ///   - request: the observed request; its value's JSON is made once per change.
        ///   - httpRequest: the HTTP request (its `Last-Event-ID`, its logger).
        ///   - scope: what clients must also share to share one observation.
        public func events<R: Queryable>(
            _ request: R, for httpRequest: Request, scope: (any Hashable & Sendable)? = nil
        ) -> Response where R.Value: JSONEncodedValue {
            events(request, for: httpRequest, scope: scope, encode: Self.encodeOwnJSON)
        }

        /// How often a server-sent events stream checks that its client is
        /// still connected while nothing is written.
        ///
        /// ```swift
        /// LiveQueries.disconnectCheckInterval   // 250 ms
        /// ```
        public static var disconnectCheckInterval: Duration { .milliseconds(250) }

        private func events<R: Queryable>(
            _ request: R, for httpRequest: Request, scope: (any Hashable & Sendable)?,
            encode: @escaping @Sendable (R.Value) throws -> [UInt8]
        ) -> Response {
            let admission = eventStream(
                request, scope: scope, lastEventID: httpRequest.headers.first(name: "Last-Event-ID"),
                logger: httpRequest.logger, encode: encode)
            switch admission {
            case .refused(let answer):
                return Response(answer)
            case .accepted(let stream):
                let body = EventStreamBody.body(run: { try await stream.run(write: $0) }, clientLeft: stream.clientLeft)
                return Response(status: .ok, headers: HTTPHeaders(EventStreamSession<R>.headers), body: body)
            }
        }
    }

    /// One server-sent events answer: the engine's stream (a value stream
    /// or a sync connection) written to Vapor's response body.
    struct EventStreamBody: Sendable {
        /// Runs the stream until it ends, writing each frame with the
        /// function it is given (the session's `run(write:)`).
        let run: @Sendable (_ write: (Frame) async throws -> Void) async throws -> Void
        /// Tells the stream that its client went away.
        let clientLeft: @Sendable () -> Void
        let writer: any BodyStreamWriter

        /// The response body that writes the stream `run`: a body callback
        /// rather than `asyncStream`, as its writer has the connection's
        /// event loop, where the disconnect probe runs.
        static func body(
            run: @escaping @Sendable (_ write: (Frame) async throws -> Void) async throws -> Void,
            clientLeft: @escaping @Sendable () -> Void
        ) -> Response.Body {
            Response.Body(stream: { writer in
                Task { await EventStreamBody(run: run, clientLeft: clientLeft, writer: writer).run() }
            })
        }

        func run() async {
            let probe = DisconnectProbe.start(
                on: writer, every: LiveQueries.disconnectCheckInterval, clientLeft: clientLeft)
            do {
                try await run { frame in
                    try await write(frame.wire(.serverSentEvents) { ByteBuffer(bytes: $0) })
                }
                probe.cancel()
                _ = writer.write(.end)
            } catch {
                // The client went away, stalled, or a write failed: failing
                // the body makes Vapor close the connection.
                probe.cancel()
                _ = writer.write(.error(error))
            }
        }

        /// Writes `buffer`; a kill of the stream (a stalled client, the
        /// shutdown's grace over) cancels the calling task, which an awaited
        /// NIO write ignores: failing the body closes the connection, and
        /// the blocked write fails with it.
        private func write(_ buffer: ByteBuffer) async throws {
            try await withTaskCancellationHandler {
                try await writer.write(.buffer(buffer)).get()
            } onCancel: {
                _ = writer.write(.error(CancellationError()))
            }
        }
    }

    /// Notices a client that closed its connection while nothing is written:
    /// Vapor tells a route of no closed connection, but a write to one fails
    /// at once. An empty write every interval (nothing goes on the wire; a
    /// chunked body frames no empty chunk), one at a time.
    private enum DisconnectProbe {
        static func start(
            on writer: any BodyStreamWriter, every interval: Duration, clientLeft: @escaping @Sendable () -> Void
        ) -> RepeatedTask {
            let inFlight = Flag()
            let amount = TimeAmount.nanoseconds(Int64(interval / .nanoseconds(1)))
            return writer.eventLoop.scheduleRepeatedTask(initialDelay: amount, delay: amount) { _ in
                guard inFlight.raise() else { return }
                let probe = writer.eventLoop.makePromise(of: Void.self)
                writer.write(.buffer(ByteBuffer()), promise: probe)
                probe.futureResult.whenComplete { result in
                    inFlight.lower()
                    if case .failure = result { clientLeft() }
                }
            }
        }
    }

    /// Whether a probe is in flight.
    private final class Flag: Sendable {
        private let raised = Atomic(false)

        /// Raises the flag; false when it was raised already.
        func raise() -> Bool { !raised.exchange(true, ordering: .relaxed) }

        func lower() { raised.store(false, ordering: .relaxed) }
    }
#endif
