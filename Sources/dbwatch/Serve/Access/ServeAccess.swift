import Crypto
import DBWatch
import Foundation
import JWTKit

/// Who may read what `serve` serves: the tokens of `--auth-token-file`,
/// the key of `--auth-jwt-secret-file`, or anyone (``open``).
///
/// Each request is authenticated once, before any query runs; a stream's
/// values are never checked again, so authorization costs nothing per
/// commit. ``reload()`` re-reads the files (`SIGHUP`): a file that cannot
/// be used then keeps the credentials in force.
///
/// ```swift
/// let access = try await ServeAccess.load(tokenFile: "tokens.txt", jwtKeyFile: nil)
/// await access.authenticate("s3cret")   // .success(.token)
/// ```
final class ServeAccess: Sendable {
    /// Who a request is.
    enum Identity: Sendable, Hashable {
        /// Anyone: no authentication is configured.
        case anonymous
        /// The holder of one of the file's tokens.
        case token
        /// The holder of a valid JWT, with its claims.
        case jwt(JWTClaims)

        /// The claims a query's `:auth_CLAIM` parameters take, if any.
        var claims: JWTClaims? {
            if case .jwt(let claims) = self { claims } else { nil }
        }

        /// Who may post to a sync connection opened with this identity: the
        /// same identity after its token is refreshed. A JWT counts by the
        /// claims in `names` (`--session-claims`, with every claim a query
        /// binds), or when none are configured by its claims without those
        /// a refresh renews (``JWTClaims/lifetimeClaims``). So a page that
        /// refreshes its token keeps its connection, and a token with other
        /// claims (another user, another team) cannot post to it.
        func connectionOwner(claims names: Set<String>?) -> Identity {
            guard case .jwt(let claims) = self else { return self }
            return .jwt(names.map(claims.only) ?? claims.withoutLifetime)
        }
    }

    /// What is in force: the tokens and the JWT key, as last read.
    private struct Credentials: Sendable {
        var tokens: AccessTokens?
        var keys: JWTKeyCollection?
    }

    /// The token file, if any.
    let tokenFile: String?
    /// The JWT key file, if any.
    let jwtKeyFile: String?
    /// The claims a sync connection belongs to (`--session-claims`);
    /// `nil`: every claim but ``JWTClaims/lifetimeClaims``.
    let sessionClaims: Set<String>?
    private let credentials: Locked<Credentials>

    private init(tokenFile: String?, jwtKeyFile: String?, sessionClaims: Set<String>?, credentials: Credentials) {
        self.tokenFile = tokenFile
        self.jwtKeyFile = jwtKeyFile
        self.sessionClaims = sessionClaims
        self.credentials = Locked(credentials)
    }

    /// No authentication: every request is ``Identity/anonymous``.
    static let open = ServeAccess(tokenFile: nil, jwtKeyFile: nil, sessionClaims: nil, credentials: Credentials())

    /// Whether requests must authenticate.
    var isRequired: Bool { tokenFile != nil || jwtKeyFile != nil }

    /// Whether JWTs are accepted (and so `:auth_CLAIM` parameters can be bound).
    var acceptsJWT: Bool { jwtKeyFile != nil }

    /// Reads the files. One that cannot be read or holds nothing usable
    /// throws an ``AccessFileError``.
    static func load(
        tokenFile: String?, jwtKeyFile: String?, sessionClaims: Set<String>? = nil
    ) async throws(AccessFileError) -> ServeAccess {
        var credentials = Credentials()
        if let tokenFile { credentials.tokens = try AccessTokens(contentsOf: tokenFile) }
        if let jwtKeyFile { credentials.keys = try await JWTKeyFile.keys(contentsOf: jwtKeyFile) }
        return ServeAccess(
            tokenFile: tokenFile, jwtKeyFile: jwtKeyFile, sessionClaims: sessionClaims, credentials: credentials)
    }

    /// Re-reads the files; returns one line per file for standard error. A
    /// file that cannot be used keeps what was read before.
    func reload() async -> [String] {
        var lines: [String] = []
        if let tokenFile {
            do throws(AccessFileError) {
                let tokens = try AccessTokens(contentsOf: tokenFile)
                credentials.withLock { $0.tokens = tokens }
                lines.append("reloaded \(tokens.count) token\(tokens.count == 1 ? "" : "s") from \(tokenFile)")
            } catch {
                lines.append("cannot reload \(error); the tokens read before stay in force")
            }
        }
        if let jwtKeyFile {
            do throws(AccessFileError) {
                let keys = try await JWTKeyFile.keys(contentsOf: jwtKeyFile)
                credentials.withLock { $0.keys = keys }
                lines.append("reloaded the JWT key from \(jwtKeyFile)")
            } catch {
                lines.append("cannot reload \(error); the JWT key read before stays in force")
            }
        }
        return lines.map(CellText.sanitized)
    }

    /// Who presents `credential`: a token of the file, or a valid JWT.
    func authenticate(_ credential: some StringProtocol) async -> Result<Identity, AuthenticationFailure> {
        guard isRequired else { return .success(.anonymous) }
        let (tokens, keys) = credentials.withLock { ($0.tokens, $0.keys) }
        if let tokens, tokens.accepts(credential) { return .success(.token) }
        guard let keys, credential.utf8.count <= Self.longestJWT, credential.split(separator: ".").count == 3 else {
            return .failure(.invalid("the token is not valid"))
        }
        do {
            return .success(.jwt(try await keys.verify(String(credential), as: JWTClaims.self)))
        } catch let error as JWTClaimsError {
            return .failure(.invalid(error.description))
        } catch {
            return .failure(.invalid("the JWT is not valid: its signature or its encoding does not verify"))
        }
    }

    /// Who presents the page's cookie (made by ``cookie(for:identity:)``).
    func authenticate(cookie value: Substring) async -> Result<Identity, AuthenticationFailure> {
        if value.hasPrefix("j.") { return await authenticate(value.dropFirst(2)) }
        let tokens = credentials.withLock { $0.tokens }
        if let tokens, tokens.acceptsCookie(value) { return .success(.token) }
        return .failure(.invalid("the cookie's token is not valid (any more): open the page's link with ?token= again"))
    }

    /// The page's cookie value for `credential`, which authenticated as
    /// `identity`: a digest for a token, the JWT itself for a JWT (it
    /// expires; its claims are needed on every request).
    func cookie(for credential: some StringProtocol, identity: Identity) -> String {
        switch identity {
        case .jwt: "j." + credential
        case .token, .anonymous: AccessTokens.cookieValue(for: credential)
        }
    }

    /// The longest JWT looked at (a larger header is refused by the server anyway).
    static let longestJWT = 16_384
}

/// Why a request did not authenticate.
enum AuthenticationFailure: Error, Sendable {
    /// No credential: no `Authorization: Bearer` header nor cookie.
    case missing
    /// A credential that is not valid (now), and why.
    case invalid(String)
}

/// The key file of `--auth-jwt-secret-file`: an RSA public key in PEM
/// (RS256), or otherwise an HS256 secret (the file's bytes, without a
/// final line break; at least 32 bytes).
enum JWTKeyFile {
    /// The shortest HS256 secret: as long as the hash (RFC 7518, 3.2).
    static let shortestSecret = 32

    /// The key collection for `path`'s key.
    static func keys(contentsOf path: String) async throws(AccessFileError) -> JWTKeyCollection {
        let text = try AccessFileError.read(path, what: "JWT key file")
        let keys = JWTKeyCollection()
        if text.contains("-----BEGIN") {
            do {
                await keys.add(rsa: try Insecure.RSA.PublicKey(pem: text), digestAlgorithm: .sha256)
            } catch {
                throw AccessFileError(
                    path: path, isUnreadable: false, reason: "the PEM is not an RSA public key (RS256): \(error)")
            }
            return keys
        }
        var secret = Array(text.utf8)
        while let last = secret.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { secret.removeLast() }
        guard secret.count >= shortestSecret else {
            throw AccessFileError(
                path: path, isUnreadable: false,
                reason: "an HS256 secret needs at least \(shortestSecret) bytes; this one has \(secret.count)")
        }
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return keys
    }
}

extension ServeAccess {
    /// Re-reads the files at each event (`SIGHUP`) until cancelled; says
    /// what each reload did on standard error.
    func reloadOnEach(of events: AsyncStream<Void>) async {
        for await _ in events {
            for line in await reload() { Output.standardError("dbwatch: \(line)\n") }
        }
    }
}
