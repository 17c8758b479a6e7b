import DBWatch
import Hummingbird
import HummingbirdAuth

extension LiveQueries {
    /// A server-sent events stream of the request an authenticated client
    /// may read: `makeRequest` builds it from the identity that
    /// HummingbirdAuth's authenticators put in the context, and the
    /// identity is the stream's `scope:`. Without an identity, a 401 with
    /// `WWW-Authenticate: Bearer` and `{"message"}`; a `makeRequest` that
    /// throws is an error answer as ``errorResponse(_:logger:)`` makes it
    /// (throw `LiveQueriesError.badRequest(_:)` for a 400, or an
    /// `HTTPError(.forbidden)` for a 403).
    ///
    /// Authorization happens here, once per request: clients with equal
    /// identities and equal requests share one observation, whose values
    /// are never checked again, so it costs nothing per client per commit.
    ///
    /// ```swift
    /// router.add(middleware: BearerTokenAuthenticator(tokens: tokens))
    /// router.get("games/mine/events") { request, context in
    ///     live.authenticatedEvents(for: request, context: context) { user in GamesOf(owner: user.id) }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - httpRequest: the HTTP request, whose closing ends the subscription.
    ///   - context: the request context, holding the identity.
    ///   - makeRequest: the observed request for the identity.
    public func authenticatedEvents<Context: AuthRequestContext, R: Queryable>(
        for httpRequest: Request,
        context: Context,
        _ makeRequest: (Context.Identity) throws -> R
    ) -> Response where Context.Identity: Hashable, R.Value: Encodable {
        guard let identity = context.identity else {
            return LiveQueriesAuthenticationMiddleware<Context>.unauthorized(
                realm: "live queries", path: httpRequest.uri.path, logger: context.logger)
        }
        do {
            return events(try makeRequest(identity), for: httpRequest, context: context, scope: identity)
        } catch {
            return errorResponse(error, logger: context.logger)
        }
    }

    /// The current value of the request an authenticated client may read,
    /// as JSON: `makeRequest` builds it from the context's identity.
    /// Without an identity, a 401 as for
    /// ``authenticatedEvents(for:context:_:)``.
    ///
    /// ```swift
    /// router.get("games/mine") { _, context in
    ///     await live.authenticatedCurrent(context: context) { user in GamesOf(owner: user.id) }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - context: the request context, holding the identity.
    ///   - makeRequest: the request for the identity.
    public func authenticatedCurrent<Context: AuthRequestContext, R: Queryable>(
        context: Context,
        _ makeRequest: (Context.Identity) throws -> R
    ) async -> Response where R.Value: Encodable {
        guard let identity = context.identity else {
            return LiveQueriesAuthenticationMiddleware<Context>.unauthorized(
                realm: "live queries", path: nil, logger: context.logger)
        }
        do {
            return await current(try makeRequest(identity), context: context)
        } catch {
            return errorResponse(error, logger: context.logger)
        }
    }
}
