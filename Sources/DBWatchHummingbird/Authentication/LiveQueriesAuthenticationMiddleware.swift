import Foundation
import Hummingbird
import HummingbirdAuth
import Logging

/// Refuses a request that no authenticator gave an identity: a 401 with
/// `WWW-Authenticate: Bearer` and the JSON body of `LiveQueries`' other
/// errors, `{"message"}`, before any query runs.
///
/// ```swift
/// router.add(middleware: BearerTokenAuthenticator(tokens: tokens))
/// router.group("live").add(middleware: LiveQueriesAuthenticationMiddleware()).get("mine/events") { … }
/// ```
public struct LiveQueriesAuthenticationMiddleware<Context: AuthRequestContext>: RouterMiddleware {
    /// The realm of the `WWW-Authenticate` challenge.
    public let realm: String

    /// A middleware that refuses requests without an identity.
    ///
    /// ```swift
    /// LiveQueriesAuthenticationMiddleware<BasicAuthRequestContext<User>>(realm: "leaderboard")
    /// ```
    ///
    /// - Parameter realm: named in `WWW-Authenticate: Bearer realm="…"`.
    public init(realm: String = "live queries") {
        self.realm = realm
    }

    /// Passes a request with an identity on; answers 401 to any other.
    ///
    /// ```swift
    /// let response = try await middleware.handle(request, context: context) { request, context in … }
    /// ```
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - context: its context, whose `identity` is checked.
    ///   - next: the rest of the chain, for an authenticated request.
    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard context.identity != nil else {
            return Self.unauthorized(realm: realm, path: request.uri.path, logger: context.logger)
        }
        return try await next(request, context)
    }

    /// The 401 answer: a Bearer challenge and `{"message"}`; logged as one
    /// debug line (`Request refused`, with `dbwatch.status` and
    /// `dbwatch.reason`, and `dbwatch.path` when known).
    static func unauthorized(realm: String, path: String?, logger: Logger) -> Response {
        let body = ErrorBody(message: "this request needs a valid bearer token")
        logger.requestRefused(status: 401, reason: body.message, path: path)
        let quoted = realm.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return Response(
            status: .unauthorized,
            headers: [.contentType: "application/json; charset=utf-8", .wwwAuthenticate: "Bearer realm=\"\(quoted)\""],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body.json)))
    }
}
