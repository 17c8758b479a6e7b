#if Vapor
    import DBWatch
    import Vapor

    extension LiveQueries {
        /// The current value of `request` as a JSON answer, or an error
        /// answer in the one shape `{"message", "code"}`: 400 for bad
        /// parameters, 503 (with `Retry-After` when busy or locked) when the
        /// database is busy, closed or replaced or the server shuts down, 409
        /// for a constraint, 507 for a full disk.
        ///
        /// ```swift
        /// app.get("leaderboard") { request in await live.current(TopPlayers(), for: request) }
        /// ```
        ///
        /// - Parameters:
        ///   - request: the request fetched once, its value encoded as JSON.
        ///   - httpRequest: the HTTP request, whose logger is used.
        public func current<R: Queryable>(_ request: R, for httpRequest: Request) async -> Response
        where R.Value: Encodable {
            Response(await currentAnswer(request, logger: httpRequest.logger, encode: Self.encodeJSON))
        }

        /// The current value of `request` as a JSON answer, the value
        /// writing its own JSON (see ``JSONEncodedValue``); statuses as for
        /// an `Encodable` value.
        ///
        /// ```swift
        /// app.get("rows") { request in await live.current(RowsQuery(), for: request) }
        /// ```
        ///
        /// - Parameters:
        ///   - request: the request fetched once.
        ///   - httpRequest: the HTTP request, whose logger is used.
        public func current<R: Queryable>(_ request: R, for httpRequest: Request) async -> Response
        where R.Value: JSONEncodedValue {
            Response(await currentAnswer(request, logger: httpRequest.logger, encode: Self.encodeOwnJSON))
        }

        /// The answer to `error` in the one JSON shape, `{"message", "code"}`:
        /// a ``LiveQueriesError`` or an SQLite error with its status (see
        /// ``LiveQueriesError/httpStatus``), a Vapor `AbortError` (a route not
        /// found, `Abort(.unauthorized)`) with its own status and reason, any
        /// other error as a 500 whose text is logged, not sent.
        ///
        /// ```swift
        /// app.post("players") { request in
        ///     do { … } catch { return live.errorResponse(error, for: request) }
        /// }
        /// ```
        ///
        /// - Parameters:
        ///   - error: what went wrong.
        ///   - httpRequest: the HTTP request, whose logger is used.
        public func errorResponse(_ error: any Error, for httpRequest: Request) -> Response {
            if !(error is LiveQueriesError), let abort = error as? any AbortError {
                var answer = HTTPAnswer.error(status: Int(abort.status.code), message: abort.reason)
                for (name, value) in abort.headers where name.lowercased() != "content-type" {
                    answer.headers.append((name, value))
                }
                return Response(answer)
            }
            return Response(errorAnswer(error, logger: httpRequest.logger))
        }
    }

    /// Answers every error thrown by a route (and Vapor's own, such as a
    /// route not found) in the one JSON shape of live queries,
    /// `{"message": …, "code": …}`, with the statuses of
    /// ``LiveQueries/errorResponse(_:for:)``, instead of Vapor's
    /// `{"error": true, "reason": …}`.
    ///
    /// ```swift
    /// app.middleware.use(LiveQueriesErrorMiddleware(live))
    /// app.get("player", ":id") { request async throws -> Player in
    ///     guard let id = request.parameters.get("id", as: Int.self) else {
    ///         throw LiveQueriesError.badRequest("id must be a number")   // 400 {"message":"id must be a number"}
    ///     }
    ///     …
    /// }
    /// ```
    public struct LiveQueriesErrorMiddleware: AsyncMiddleware {
        /// The live queries whose configuration (`Retry-After`) the answers use.
        ///
        /// ```swift
        /// middleware.live.configuration.retryAfterSeconds
        /// ```
        public let live: LiveQueries

        /// A middleware answering errors as `live` does.
        ///
        /// ```swift
        /// app.middleware.use(LiveQueriesErrorMiddleware(live))
        /// ```
        ///
        /// - Parameter live: the live queries whose configuration the answers use.
        public init(_ live: LiveQueries) {
            self.live = live
        }

        /// The route's response, or its error in the one JSON shape.
        ///
        /// ```swift
        /// let response = try await middleware.respond(to: request, chainingTo: responder)
        /// ```
        public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
            do {
                return try await next.respond(to: request)
            } catch {
                return live.errorResponse(error, for: request)
            }
        }
    }

    /// A thrown ``LiveQueriesError`` keeps its status and message even where
    /// Vapor's own `ErrorMiddleware` answers it (in Vapor's shape).
    extension LiveQueriesError: AbortError {
        /// ``httpStatus`` as Vapor's status.
        ///
        /// ```swift
        /// LiveQueriesError.forbidden("not yours").status   // .forbidden
        /// ```
        public var status: HTTPResponseStatus { HTTPResponseStatus(statusCode: httpStatus) }

        /// ``message``.
        ///
        /// ```swift
        /// LiveQueriesError.badRequest("limit must be positive").reason   // "limit must be positive"
        /// ```
        public var reason: String { message }
    }
#endif
