import Hummingbird
import HummingbirdAuth

/// A HummingbirdAuth authenticator for `Authorization: Bearer TOKEN`:
/// each known token stands for an identity. Tokens are compared in
/// constant time: every byte of every known token is looked at, whatever
/// matches, so the time taken does not say how much of a token was right.
///
/// A request without a known token goes on without an identity; put
/// ``LiveQueriesAuthenticationMiddleware`` (or HummingbirdAuth's
/// `IsAuthenticatedMiddleware`) after it to refuse such requests, or use
/// `LiveQueries.authenticatedEvents(for:context:_:)` in the route.
///
/// ```swift
/// let router = Router(context: BasicAuthRequestContext<User>.self)
/// router.add(middleware: BearerTokenAuthenticator(tokens: ["s3cret-alice": User(id: 1)]))
/// ```
public struct BearerTokenAuthenticator<Context: AuthRequestContext>: AuthenticatorMiddleware
where Context.Identity: Sendable {
    /// The identity that authenticated requests carry.
    public typealias Identity = Context.Identity

    private let tokens: [(token: [UInt8], identity: Identity)]

    /// An authenticator for `tokens`, each with the identity it stands for.
    ///
    /// ```swift
    /// BearerTokenAuthenticator<BasicAuthRequestContext<User>>(tokens: ["s3cret": User(id: 1)])
    /// ```
    ///
    /// - Parameter tokens: the known tokens (empty ones are ignored) and their identities.
    public init(tokens: [String: Identity]) {
        self.tokens = tokens.filter { !$0.key.isEmpty }.map { (Array($0.key.utf8), $0.value) }
    }

    /// The identity of the request's bearer token, or nil.
    ///
    /// ```swift
    /// let identity = try await authenticator.authenticate(request: request, context: context)
    /// ```
    ///
    /// - Parameters:
    ///   - request: the request, whose `Authorization` header is read.
    ///   - context: the request context (unused).
    public func authenticate(request: Request, context: Context) async throws -> Identity? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return identity(for: Array(parts[1].utf8))
    }

    /// The identity of `presented`, comparing it with every known token in full.
    func identity(for presented: [UInt8]) -> Identity? {
        var match: Identity?
        for entry in tokens {
            // Equal when both the lengths and every byte agree; the loop runs
            // over the known token's length whatever `presented` holds.
            var difference = UInt(bitPattern: entry.token.count ^ presented.count)
            for index in entry.token.indices {
                let byte = index < presented.count ? presented[index] : 0
                difference |= UInt(entry.token[index] ^ byte)
            }
            if difference == 0 { match = entry.identity }
        }
        return match
    }
}
