import DBWatchDelivery
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Answers only requests for this server, and writes only from its own
/// pages: the protection against DNS rebinding and cross-site requests that
/// a server on `127.0.0.1` (or on a name users reach locally) needs, since
/// listening on loopback does not keep a browser's pages out.
///
/// ```swift
/// let router = Router(context: BasicWebSocketRequestContext.self)
/// router.add(middleware: TrustedHostMiddleware(allowedHosts: ["dashboard.internal"]))
/// ```
///
/// Before any route runs:
///
/// - A request without `Host` (or with two) is a 400.
/// - A `Host` that is not one of ``TrustedHosts`` (loopback names, IP
///   addresses, `allowedHosts`) is a 403: a page on `evil.example` whose name
///   is rebound to `127.0.0.1` reads nothing.
/// - A WebSocket upgrade whose `Origin` is another site's is a 403: browsers
///   send any site's WebSocket to any address, with the user's cookies.
/// - A request that changes something (`POST`, `PUT`, `PATCH`, `DELETE`) is
///   checked by ``TrustedWritePolicy``: by default from this server's own pages
///   only, and with a body declared JSON, which a foreign page cannot send
///   without asking first (a CORS preflight this server does not grant).
///
/// Every answer it lets through gets `Cross-Origin-Resource-Policy:
/// same-origin` and `X-Content-Type-Options: nosniff` (unless the route set
/// them), so that another site's page cannot embed a route's JSON as a
/// script or an image. Each refusal is a JSON body `{"message"}`, and one
/// debug line of the request's logger (`Request refused`, with the keys
/// `dbwatch.status`, `dbwatch.reason`, `dbwatch.path` and, with a context
/// that knows it, `dbwatch.client`).
///
/// Requests without `Origin` (command-line clients, server-to-server calls),
/// or with one no browser sends (`ws://…`), are not cross-site and pass the
/// `Origin` checks; the `Host` check applies to every request.
public struct TrustedHostMiddleware<Context: RequestContext>: RouterMiddleware {
    /// What the middleware checks.
    let rules: TrustedRequestRules

    /// The names this server answers to.
    public var hosts: TrustedHosts { rules.hosts }
    /// Origins besides the server's own that may open WebSockets and write.
    public var allowedOrigins: Set<String> { rules.allowedOrigins }
    /// What writes must be.
    public var writes: TrustedWritePolicy { rules.writes }

    /// A middleware that answers the loopback names, IP addresses and
    /// `allowedHosts` (see ``TrustedHosts`` for their forms).
    ///
    /// ```swift
    /// router.add(middleware: TrustedHostMiddleware(allowedHosts: [".internal.example.com"]))
    /// ```
    ///
    /// - Parameters:
    ///   - allowedHosts: names besides loopback and IP addresses.
    ///   - allowedOrigins: origins besides the server's own, in the form
    ///     browsers send (`scheme://host[:port]`).
    ///   - writes: what requests that change something must be.
    public init(
        allowedHosts: [String] = [], allowedOrigins: [String] = [], writes: TrustedWritePolicy = .sameOriginJSON
    ) {
        rules = TrustedRequestRules(hosts: TrustedHosts(allowedHosts), allowedOrigins: allowedOrigins, writes: writes)
    }

    /// Refuses what the type's description says, else calls `next`.
    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if let refusal = rules.refusal(of: request) {
            let address = (context as? any RemoteAddressRequestContext)?.remoteAddress
            context.logger.requestRefused(
                status: refusal.status.code, reason: refusal.message, path: request.uri.path,
                client: address.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" })
            return refusal.response
        }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            // Hummingbird's own answers (a 404 without a route) get the same fields.
            response = try error.response(from: request, context: context)
        }
        // Another site's page that embeds a route (`<script src>`, `<img>`) gets nothing.
        for (name, value) in TrustedRequestRules.answerFields where response.headers[name] == nil {
            response.headers[name] = value
        }
        return response
    }
}

/// What ``TrustedHostMiddleware`` asks of a request that changes something
/// (`POST`, `PUT`, `PATCH`, `DELETE`).
///
/// ```swift
/// TrustedHostMiddleware(allowedHosts: [], writes: .sameOrigin)   // form posts allowed
/// ```
public enum TrustedWritePolicy: Sendable, Hashable {
    /// From no other origin, with a body (if any) declared
    /// `application/json` or `…+json`; anything else is a 415. The default.
    case sameOriginJSON
    /// From no other origin; any body.
    case sameOrigin
    /// Not checked: the application checks writes itself (a CSRF token,
    /// its own authentication that cookies cannot carry).
    case unchecked
}

/// The checks of ``TrustedHostMiddleware``, apart from its request context.
struct TrustedRequestRules: Sendable {
    let hosts: TrustedHosts
    let allowedOrigins: Set<String>
    let writes: TrustedWritePolicy

    init(hosts: TrustedHosts, allowedOrigins: [String], writes: TrustedWritePolicy) {
        self.hosts = hosts
        self.allowedOrigins = Set(allowedOrigins.map { Self.normalizedOrigin($0) ?? $0.lowercased() })
        self.writes = writes
    }

    /// Why `request` is refused, if it is.
    func refusal(of request: Request) -> HostRefusal? {
        // NIO gives the first Host as the authority and leaves any other in the fields.
        guard let authority = request.head.authority, !authority.isEmpty, request.headers[Self.host] == nil else {
            return HostRefusal(.badRequest, "a request names its host in exactly one Host header")
        }
        guard hosts.allows(authority: authority) else {
            return HostRefusal(
                .forbidden,
                "this server does not answer to the host \(Self.shown(authority)); "
                    + "its operator can allow the name (DNS rebinding protection)")
        }
        let isUpgrade = Self.isWebSocketUpgrade(request)
        // Every method but the safe ones, as Django's and Starlette's CSRF checks count them.
        let isWrite = !Self.safeMethods.contains(request.method)
        guard isUpgrade || (isWrite && writes != .unchecked) else { return nil }
        if let origin = request.headers[.origin], !Self.isNonBrowserOrigin(origin),
            !isSameOrigin(origin, authority: authority)
        {
            return HostRefusal(
                .forbidden,
                "a page of \(Self.shown(origin)) may not \(isUpgrade ? "open a WebSocket on" : "write to") this server")
        }
        if isWrite, writes == .sameOriginJSON, Self.hasBody(request), !Self.isJSON(request.headers[.contentType]) {
            return HostRefusal(.unsupportedMediaType, "the body must be JSON, with Content-Type: application/json")
        }
        return nil
    }

    private static let host = HTTPField.Name("Host")!
    /// What every answer let through carries, unless the route set it.
    static let answerFields = [
        (HTTPField.Name("Cross-Origin-Resource-Policy")!, "same-origin"),
        (HTTPField.Name("X-Content-Type-Options")!, "nosniff"),
    ]
    private static let safeMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace]
    private static let webSocketKey = HTTPField.Name("Sec-WebSocket-Key")!

    /// Whether `request` asks for a WebSocket: `websocket` among its
    /// `Upgrade` tokens (as NIO's upgrader reads them), or a WebSocket key.
    private static func isWebSocketUpgrade(_ request: Request) -> Bool {
        if request.headers[webSocketKey] != nil { return true }
        return request.headers[values: .upgrade].contains { value in
            value.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == "websocket" }
        }
    }

    private func isSameOrigin(_ origin: String, authority: String) -> Bool {
        guard let origin = Self.normalizedOrigin(origin) else { return false }
        if allowedOrigins.contains(origin) { return true }
        // The origin's `HOST[:PORT]` against the Host the browser sent (which
        // omits a default port). Not the scheme: behind a proxy that ends TLS
        // the page is https and this connection http.
        guard let separator = origin.range(of: "://") else { return false }
        let scheme = origin[..<separator.lowerBound]
        let defaultPort = scheme == "https" ? ":443" : ":80"
        var hostAuthority = authority.lowercased()
        if hostAuthority.hasSuffix(defaultPort) { hostAuthority.removeLast(defaultPort.count) }
        return origin[separator.upperBound...] == hostAuthority
    }

    /// `scheme://host[:port]` in lower case, without a default port, or nil
    /// for `null` and anything that is not an origin. A final `/` is
    /// dropped (browsers send none; people write one).
    static func normalizedOrigin(_ origin: String) -> String? {
        var origin = origin.lowercased()
        if origin.hasSuffix("/") { origin.removeLast() }
        guard let separator = origin.range(of: "://") else { return nil }
        let scheme = origin[..<separator.lowerBound]
        var authority = String(origin[separator.upperBound...])
        guard scheme == "http" || scheme == "https", !authority.isEmpty, !authority.contains("/"),
            TrustedHosts.host(ofAuthority: authority) != nil
        else { return nil }
        let defaultPort = scheme == "https" ? ":443" : ":80"
        if authority.hasSuffix(defaultPort) { authority.removeLast(defaultPort.count) }
        return "\(scheme)://\(authority)"
    }

    /// Whether `origin` is one no browser sends: `ws://…` and `wss://…`,
    /// which some WebSocket clients (HummingbirdWSClient among them) send
    /// as their own; such a client could as well send no `Origin`.
    private static func isNonBrowserOrigin(_ origin: String) -> Bool {
        let origin = origin.lowercased()
        return origin.hasPrefix("ws://") || origin.hasPrefix("wss://")
    }

    private static func hasBody(_ request: Request) -> Bool {
        if request.headers[.transferEncoding] != nil { return true }
        guard let length = request.headers[.contentLength] else { return false }
        return length != "0"
    }

    private static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
        return mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json"))
    }

    /// At most 200 characters of what a client sent, for a message.
    private static func shown(_ text: String) -> String {
        let printable = text.unicodeScalars.map {
            $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?"
        }
        return String(printable.prefix(200))
    }
}

/// A request the ``TrustedHostMiddleware`` refuses: its status and message.
struct HostRefusal: Sendable {
    let status: HTTPResponse.Status
    let message: String

    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }

    var response: Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        for (name, value) in TrustedRequestRules.answerFields { headers[name] = value }
        return Response(
            status: status, headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: ErrorBody(message: message).json)))
    }
}
