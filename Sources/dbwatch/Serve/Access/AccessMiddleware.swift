import DBWatch
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Authenticates every request of `serve` before any route runs, when
/// ``ServeAccess`` requires it; the identity goes into the context, whose
/// claims the routes bind to `:auth_CLAIM` parameters.
///
/// - `Authorization: Bearer TOKEN`: a token of the file or a JWT.
/// - The cookie `dbwatch_token`, which the page's one-time link sets:
///   `GET /?token=TOKEN` answers a small page that sets the cookie
///   (`HttpOnly`, `SameSite=Strict`, `Path=/`) and replaces itself with
///   the same URL without `token`, so the token stays out of the address
///   bar, the history and `Referer`. Browsers' `EventSource` cannot send
///   headers; with the cookie, the page's streams need no token in URLs.
/// - Anything else is a 401 with `WWW-Authenticate: Bearer` and a JSON
///   body `{"message"}`, whatever the path, except the load balancer's
///   checks `/healthz` and `/readyz`, which say nothing of the data
///   (`/metrics` needs a token like the rest).
///
/// ```swift
/// router.add(middleware: AccessMiddleware(access: access))
/// ```
struct AccessMiddleware: RouterMiddleware {
    typealias Context = ServeRequestContext

    /// The credentials in force.
    let access: ServeAccess

    /// The cookie's name.
    static let cookieName = "dbwatch_token"

    /// The paths served without a token: health and readiness checks.
    static let openPaths: Set<String> = ["/healthz", "/readyz"]

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard access.isRequired, !Self.openPaths.contains(request.uri.path) else {
            return try await next(request, context)
        }
        if request.uri.path == "/", let link = Self.tokenParameter(request.uri.query) {
            switch await access.authenticate(link.token) {
            case .success(let identity):
                return Self.signIn(
                    cookie: access.cookie(for: link.token, identity: identity), identity: identity, query: link.rest)
            case .failure(let failure):
                return Self.unauthorized(failure, request: request, context: context)
            }
        }
        let result: Result<ServeAccess.Identity, AuthenticationFailure>
        if let authorization = request.headers[.authorization] {
            guard let token = Self.bearerToken(authorization) else {
                return Self.unauthorized(
                    .invalid("the Authorization header must be Bearer TOKEN"), request: request, context: context)
            }
            result = await access.authenticate(token)
        } else if let cookie = Self.cookie(in: request.headers) {
            result = await access.authenticate(cookie: cookie)
        } else {
            result = .failure(.missing)
        }
        switch result {
        case .success(let identity):
            var context = context
            context.identity = identity
            return try await next(request, context)
        case .failure(let failure):
            return Self.unauthorized(failure, request: request, context: context)
        }
    }

    /// The token of `Authorization: Bearer TOKEN` (the scheme in any case).
    static func bearerToken(_ header: String) -> Substring? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token[...]
    }

    /// The value of the `dbwatch_token` cookie, from every `Cookie` field.
    static func cookie(in headers: HTTPFields) -> Substring? {
        for field in headers[values: .cookie] {
            for pair in field.split(separator: ";") {
                let pair = pair.drop(while: { $0 == " " })
                if pair.hasPrefix(cookieName + "=") { return pair.dropFirst(cookieName.count + 1) }
            }
        }
        return nil
    }

    /// The value of `token` in a query string, and the query string
    /// without it (its other parts as they were written).
    static func tokenParameter(_ query: String?) -> (token: String, rest: String)? {
        guard let query else { return nil }
        var token: String?
        var rest: [Substring] = []
        for part in query.split(separator: "&") {
            if part == "token" || part.hasPrefix("token=") {
                token = String(part.dropFirst("token=".count)).removingPercentEncoding
            } else {
                rest.append(part)
            }
        }
        guard let token, !token.isEmpty else { return nil }
        return (token, rest.joined(separator: "&"))
    }

    /// The answer to the one-time link: the cookie, and a page that goes
    /// on to the same URL without the token.
    static func signIn(cookie: String, identity: ServeAccess.Identity, query: String) -> Response {
        var attributes = "\(cookieName)=\(cookie); Path=/; HttpOnly; SameSite=Strict"
        if let expiration = identity.claims?.expiration {
            attributes += "; Max-Age=\(max(0, Int(expiration.timeIntervalSinceNow)))"
        }
        let location = "/" + (query.isEmpty ? "" : "?" + query)
        // JSON, with `<` escaped, is a JavaScript string that cannot end the script.
        let literal = JSON.string(location).rendered().replacingOccurrences(of: "<", with: "\\u003c")
        let html = """
            <!doctype html><meta charset="utf-8"><title>dbwatch</title>\
            <script>location.replace(\(literal))</script>\
            <noscript>Signed in: <a href="/">continue</a>.</noscript>
            """
        // A page, not a 303: a redirect that a link on another site started
        // would not carry a SameSite=Strict cookie; the page's own navigation does.
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store", .setCookie: attributes,
                HTTPField.Name("Referrer-Policy")!: "no-referrer",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// A 401 with `WWW-Authenticate: Bearer` and a JSON body, logged as
    /// one debug line (``QueryServer/refused(_:_:request:context:)``).
    static func unauthorized(_ failure: AuthenticationFailure, request: Request, context: Context) -> Response {
        let message: String
        var challenge = #"Bearer realm="dbwatch""#
        switch failure {
        case .missing:
            message =
                "this server needs a token: send Authorization: Bearer TOKEN, "
                + "or open the page once as /?token=TOKEN to get its cookie"
        case .invalid(let reason):
            message = reason
            challenge += #", error="invalid_token""#
        }
        var response = QueryServer.refused(.unauthorized, message, request: request, context: context)
        response.headers[.wwwAuthenticate] = challenge
        return response
    }
}
