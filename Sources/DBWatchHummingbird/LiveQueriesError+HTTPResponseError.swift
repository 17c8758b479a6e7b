import DBWatchDelivery
import HTTPTypes
import Hummingbird
import NIOCore

/// A `LiveQueriesError` thrown from any route is answered with its status and
/// the one JSON shape of errors, `{"message": …}`, with `Retry-After: 1`
/// when it is retryable.
///
/// ```swift
/// router.get("todos/:owner") { request, context in
///     guard try context.parameters.require("owner") == user.id else { throw LiveQueriesError.forbidden("not yours") }
///     …
/// }
/// ```
extension LiveQueriesError: HTTPResponseError {
    /// The HTTP status: 400, 403 or 503.
    ///
    /// ```swift
    /// LiveQueriesError.forbidden("not yours").status   // .forbidden
    /// ```
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: httpStatus) }

    /// The error answer, in the one JSON shape.
    ///
    /// ```swift
    /// let response = try LiveQueriesError.badRequest("limit must be positive").response(from: request, context: context)
    /// ```
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(HTTPAnswer.error(self, retryAfterSeconds: 1))
    }
}

/// Answers every error a route throws in the one JSON shape of live
/// queries, `{"message": …, "code": …}`, with the status of the one table
/// (see "Errors a client receives" in DBWatchDelivery): Hummingbird's own
/// `HTTPError` (a path without a route is a 404) with its status and
/// message, a SQLite error with its status, any other error as a 500 that
/// says nothing of it. Add it first, so that one server answers errors in
/// one shape.
///
/// ```swift
/// let router = Router()
/// router.add(middleware: LiveQueriesErrorMiddleware(live))
/// ```
public struct LiveQueriesErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let live: LiveQueries

    /// Answers errors with `live`'s table and `Retry-After`.
    ///
    /// ```swift
    /// router.add(middleware: LiveQueriesErrorMiddleware(live))
    /// ```
    ///
    /// - Parameter live: the live queries whose configuration gives `Retry-After`.
    public init(_ live: LiveQueries) {
        self.live = live
    }

    /// Runs the rest of the chain and answers what it throws.
    ///
    /// ```swift
    /// let response = try await middleware.handle(request, context: context) { _, _ in throw HTTPError(.notFound) }
    /// ```
    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return live.errorResponse(error, logger: context.logger)
        }
    }
}
