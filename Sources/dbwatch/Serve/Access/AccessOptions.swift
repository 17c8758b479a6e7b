import ArgumentParser

/// `serve`'s options of access control: who may read the queries.
///
/// ```sh
/// dbwatch serve app.sqlite --host 0.0.0.0 --auth-token-file tokens.txt --query …
/// ```
struct AccessOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Bearer tokens, one a line (# starts a comment): a request needs Authorization: Bearer TOKEN or the "
                + "page's cookie (open /?token=TOKEN once). Re-read on SIGHUP.",
            valueName: "file"))
    var authTokenFile: String?

    @Option(
        help: ArgumentHelp(
            "Accept JWTs signed with this HS256 secret (at least 32 bytes) or RSA public key in PEM (RS256), with "
                + "exp; their claims fill the parameters :auth_CLAIM. Re-read on SIGHUP.",
            valueName: "file"))
    var authJwtSecretFile: String?

    @Flag(help: "Serve anyone who can reach --host, without authentication (needed for an address beyond loopback).")
    var noAuth = false

    @Option(
        help: ArgumentHelp(
            "The JWT claims a sync connection belongs to, comma-separated: a message posted to it needs a token with "
                + "the same values of these and of every claim a query binds. Default: every claim but exp, iat, nbf "
                + "and jti; give sub,iss for an identity provider whose refreshed tokens change other claims "
                + "(Azure AD's uti, aio, rh). A token without one of these cannot open or post to a connection (403).",
            valueName: "claims"))
    var sessionClaims: String?

    /// The names `--session-claims` gives, if given.
    var sessionClaimNames: Set<String>? {
        sessionClaims.map {
            Set(
                $0.split(separator: ",", omittingEmptySubsequences: false).map {
                    $0.trimmingCharacters(in: .whitespaces)
                })
        }
    }

    /// Whether a token or key file is given.
    var isConfigured: Bool { authTokenFile != nil || authJwtSecretFile != nil }

    func validate() throws {
        if noAuth && isConfigured {
            throw ValidationError(
                "--no-auth contradicts --auth-token-file and --auth-jwt-secret-file: give one or the other.")
        }
        if let names = sessionClaimNames {
            if authJwtSecretFile == nil {
                throw ValidationError("--session-claims names JWT claims: give --auth-jwt-secret-file too.")
            }
            if names.contains("") || names.isEmpty {
                throw ValidationError("--session-claims takes claim names separated by commas, such as sub,iss.")
            }
            if let lifetime = names.intersection(JWTClaims.lifetimeClaims).sorted().first {
                throw ValidationError(
                    "--session-claims \(lifetime): a refreshed token renews it, so its connection would be lost.")
            }
        }
    }

    /// Refuses an address beyond loopback without authentication, unless
    /// `--no-auth` says so.
    func validate(host: String) throws {
        if !ServeCommand.isLoopback(host) && !isConfigured && !noAuth {
            throw ValidationError(
                "--host \(CellText.sanitized(host)) is reachable beyond this machine: give --auth-token-file FILE or "
                    + "--auth-jwt-secret-file FILE, or --no-auth to serve these queries to anyone who can reach it.")
        }
    }

    /// Reads the files: an unreadable one exits 66, one without a token or
    /// a usable key 64.
    func load() async throws -> ServeAccess {
        guard isConfigured else { return .open }
        do {
            return try await ServeAccess.load(
                tokenFile: authTokenFile, jwtKeyFile: authJwtSecretFile, sessionClaims: sessionClaimNames)
        } catch {
            throw ErrorReport.exit(for: error.commandFailure)
        }
    }

    /// Refuses, before the server listens, a query that binds claims
    /// (`:auth_CLAIM`) when no JWT can bring them (exit 64).
    func check(_ queries: [ServedQuery]) throws {
        guard authJwtSecretFile == nil, let query = queries.first(where: { !$0.claimNames.isEmpty }) else { return }
        throw ErrorReport.exit(
            for: CommandFailure(
                .usage,
                "query \(query.name): :\(ServedQuery.claimPrefix)\(query.claimNames[0]) takes a JWT's claim; "
                    + "give --auth-jwt-secret-file FILE"))
    }
}
