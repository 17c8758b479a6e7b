import AsyncHTTPClient
import Crypto
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import JWTKit
import NIOCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `dbwatch serve` with `--auth-token-file` and `--auth-jwt-secret-file`,
/// run as a separate process and read over real sockets: every route needs
/// a token, the page's cookie opens the page and its streams, SIGHUP
/// re-reads the tokens, and a JWT's claims bind `:auth_CLAIM` parameters.
@Suite("dbwatch serve: authentication", RequiredProgram.sqlite3.trait)
struct ServeAuthenticationEndToEndTests {
    let serving = ServeEndToEndTests()
    static let top = ServeEndToEndTests.top
    /// Rows of the requester's team: `:auth_team` is the JWT's claim `team`.
    static let mine = "mine=SELECT name, score FROM player WHERE team = :auth_team ORDER BY score DESC LIMIT :n"
    static let secret = "a test secret of more than thirty-two bytes, for HS256"

    /// A file holding `text`.
    func file(_ text: String, named name: String, in scratch: TemporaryDirectory) throws -> String {
        let path = scratch.file(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Fetches `url` with `headers`; the status, the headers and the body.
    func get(_ url: String, headers: [(String, String)] = []) async throws -> (
        status: Int, headers: [(name: String, value: String)], body: String
    ) {
        var request = HTTPClientRequest(url: url)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 24)
        return (Int(response.status.code), response.headers.map { ($0.name, $0.value) }, String(buffer: body))
    }

    /// An HS256 JWT with `claims`, signed by the test.
    func jwt(_ claims: TestClaims, secret: String = Self.secret) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: Array(secret.utf8)), digestAlgorithm: .sha256)
        return try await keys.sign(claims)
    }

    /// A time `seconds` from now, as a NumericDate.
    func inSeconds(_ seconds: Int) -> Int { Int(Date().timeIntervalSince1970) + seconds }

    @Test(.hangLimit(minutes: 1))
    func everyRouteWithoutAValidTokenIsA401WithABearerChallengeAndAJSONBody() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try serving.makePlayers(in: scratch)
            let tokens = try file("# readers\nfirst-token\n\n  second-token  \n", named: "tokens.txt", in: scratch)
            let served = try await serving.serve(path, ["--query", Self.top, "--auth-token-file", tokens])
            defer { served.run.kill() }
            for route in ["", "queries", "queries/top?n=1", "queries/top/events?n=1", "no/such/path"] {
                let answer = try await get(served.url + route)
                #expect(answer.status == 401, "\(route)")
                #expect(
                    answer.headers.first { $0.name.lowercased() == "www-authenticate" }?.value
                        == #"Bearer realm="dbwatch""#)
                let message = try jsonObject(answer.body)["message"] as? String
                #expect(message?.contains("Authorization: Bearer") == true, "\(route)")
                // Nothing of the queries leaks: no SQL, no value.
                #expect(!answer.body.contains("player") && !answer.body.contains("Arthur"))
            }
            for wrong in ["Bearer first-tokenx", "Bearer first", "Basic Zmlyc3QtdG9rZW4=", "Bearer "] {
                let answer = try await get(served.url + "queries/top?n=1", headers: [("Authorization", wrong)])
                #expect(answer.status == 401, "\(wrong)")
                #expect(
                    answer.headers.first { $0.name.lowercased() == "www-authenticate" }?.value.contains("invalid_token")
                        == true)
            }
            // The token in the URL of a value or a stream is not a credential.
            #expect(try await get(served.url + "queries/top?n=1&token=first-token").status == 401)
        }
    }

    @Test(.hangLimit(minutes: 1))
    func aBearerTokenReadsTheListTheValuesAndTheStreams() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try serving.makePlayers(in: scratch)
            let tokens = try file("first-token\n  second-token  \n", named: "tokens.txt", in: scratch)
            let served = try await serving.serve(path, ["--query", Self.top, "--auth-token-file", tokens])
            defer { served.run.kill() }
            let bearer = [("Authorization", "Bearer second-token")]
            #expect(try await get(served.url + "queries", headers: bearer).status == 200)
            let current = try await get(
                served.url + "queries/top?n=1", headers: [("Authorization", "bearer first-token")])
            #expect(current.status == 200)
            #expect(current.body == #"{"columns":["name","score"],"rows":[["Arthur",100]]}"#)
            let stream = try await EventStream.open(served.url + "queries/top/events?n=1", headers: bearer)
            #expect(stream.status == 200)
            #expect(try await stream.nextEvent().rows.first?[0] as? String == "Arthur")
            try serving.write("UPDATE player SET score = 300 WHERE name = 'Craig'", on: path)
            #expect(try await stream.nextEvent().rows.first?[0] as? String == "Craig")
        }
    }

    @Test(.hangLimit(minutes: 1))
    func theOneTimeLinkSetsAStrictHttpOnlyCookieThatOpensThePageAndItsStreams() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try serving.makePlayers(in: scratch)
            let tokens = try file("first-token\n", named: "tokens.txt", in: scratch)
            let served = try await serving.serve(path, ["--query", Self.top, "--auth-token-file", tokens])
            defer { served.run.kill() }
            let link = try await get(served.url + "?n=2&token=first-token")
            #expect(link.status == 200)
            let setCookie = try #require(link.headers.first { $0.name.lowercased() == "set-cookie" }?.value)
            let attributes = setCookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(attributes.contains("HttpOnly"))
            #expect(attributes.contains("SameSite=Strict"))
            #expect(attributes.contains("Path=/"))
            let cookie = try #require(attributes.first)
            #expect(cookie.hasPrefix("dbwatch_token="))
            // The cookie holds a digest, not the token.
            #expect(!cookie.contains("first-token"))
            // The page goes on to the same address without the token, and is not kept.
            #expect(link.body.contains(#"location.replace("/?n=2")"#))
            #expect(!link.body.contains("first-token"))
            #expect(link.headers.first { $0.name.lowercased() == "cache-control" }?.value == "no-store")
            #expect(link.headers.first { $0.name.lowercased() == "referrer-policy" }?.value == "no-referrer")

            let withCookie = [("Cookie", "theme=dark; " + cookie)]
            let page = try await get(served.url + "?n=2", headers: withCookie)
            #expect(page.status == 200)
            #expect(page.body.contains(#"from "./dbwatch.js""#))
            #expect(try await get(served.url + "dbwatch.js", headers: withCookie).status == 200)
            #expect(try await get(served.url + "queries", headers: withCookie).status == 200)
            let stream = try await EventStream.open(served.url + "queries/top/events?n=2", headers: withCookie)
            #expect(stream.status == 200)
            #expect(try await stream.nextEvent().rows.count == 2)

            // A wrong link sets nothing.
            let wrong = try await get(served.url + "?token=nope")
            #expect(wrong.status == 401)
            #expect(!wrong.headers.contains { $0.name.lowercased() == "set-cookie" })
            #expect(try await get(served.url, headers: [("Cookie", "dbwatch_token=first-token")]).status == 401)
        }
    }

    @Test(.hangLimit(minutes: 1))
    func sighupReReadsTheTokenFileAndAFileThatCannotBeUsedKeepsTheTokensInForce() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try serving.makePlayers(in: scratch)
            let tokens = try file("old-token\n", named: "tokens.txt", in: scratch)
            let served = try await serving.serve(path, ["--query", Self.top, "--auth-token-file", tokens])
            defer { served.run.kill() }
            let url = served.url + "queries/top?n=1"
            let oldCookie = try #require(
                try await get(served.url + "?token=old-token").headers.first { $0.name.lowercased() == "set-cookie" }?
                    .value.split(separator: ";").first.map(String.init))
            #expect(try await get(url, headers: [("Authorization", "Bearer old-token")]).status == 200)

            try "new-token\n".write(toFile: tokens, atomically: true, encoding: .utf8)
            served.run.send(SIGHUP)
            _ = try await served.run.wait(forError: "reloaded 1 token from")
            #expect(try await get(url, headers: [("Authorization", "Bearer old-token")]).status == 401)
            #expect(try await get(url, headers: [("Cookie", oldCookie)]).status == 401)
            #expect(try await get(url, headers: [("Authorization", "Bearer new-token")]).status == 200)

            try "# nobody\n".write(toFile: tokens, atomically: true, encoding: .utf8)
            served.run.send(SIGHUP)
            _ = try await served.run.wait(forError: "the tokens read before stay in force")
            try FileManager.default.removeItem(atPath: tokens)
            served.run.send(SIGHUP)
            let snapshot = try await served.run.wait(forError: "no such token file")
            #expect(!snapshot.isFinished)
            #expect(try await get(url, headers: [("Authorization", "Bearer new-token")]).status == 200)
        }
    }

    @Test(.hangLimit(minutes: 1))
    func aJWTsClaimsBindAuthParametersAndEqualClaimsShareOneObservation() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try serving.makePlayers(in: scratch)
            let secret = try file(Self.secret + "\n", named: "jwt.secret", in: scratch)
            let served = try await serving.serve(
                path, ["--query", Self.mine, "--query", Self.top, "--auth-jwt-secret-file", secret])
            defer { served.run.kill() }
            let red = try await jwt(TestClaims(sub: "alice", team: "red", exp: inSeconds(600)))
            // Another token of the same team: other sub, other exp.
            let red2 = try await jwt(TestClaims(sub: "carol", team: "red", exp: inSeconds(900)))
            let blue = try await jwt(TestClaims(sub: "bob", team: "blue", exp: inSeconds(600)))
            let url = served.url + "queries/mine/events?n=5"
            let alice = try await EventStream.open(url, headers: [("Authorization", "Bearer " + red)])
            let carol = try await EventStream.open(url, headers: [("Authorization", "Bearer " + red2)])
            let bob = try await EventStream.open(url, headers: [("Authorization", "Bearer " + blue)])
            let aliceFirst = try await alice.nextEvent()
            let carolFirst = try await carol.nextEvent()
            let bobFirst = try await bob.nextEvent()
            #expect(try aliceFirst.rows.map { $0[0] as? String } == ["Arthur", "Craig"])
            #expect(try bobFirst.rows.map { $0[0] as? String } == ["Barbara"])
            // One observation for the red team: the same value, the same version.
            #expect(carolFirst == aliceFirst)
            #expect(bobFirst.id?.split(separator: "-").first != aliceFirst.id?.split(separator: "-").first)

            try serving.write("UPDATE player SET score = 10 WHERE name = 'Arthur'", on: path)
            let aliceNext = try await alice.nextEvent()
            #expect(try aliceNext.rows.map { $0[0] as? String } == ["Craig", "Arthur"])
            #expect(try await carol.nextEvent() == aliceNext)

            // Over JSON too, and the list says which claims a query takes.
            let current = try await get(served.url + "queries/mine?n=1", headers: [("Authorization", "Bearer " + blue)])
            #expect(current.body == #"{"columns":["name","score"],"rows":[["Barbara",80]]}"#)
            let list = try await get(served.url + "queries", headers: [("Authorization", "Bearer " + blue)])
            let queries = try #require(try JSONSerialization.jsonObject(with: Data(list.body.utf8)) as? [[String: Any]])
            #expect(queries[0]["parameters"] as? [String] == ["n"])
            #expect(queries[0]["claims"] as? [String] == ["team"])
        }
    }

    /// A sync connection takes the messages of the token that opened it,
    /// refreshed (another `exp` and `iat`), and refuses those of a token
    /// with other claims as a session it does not know (404): a page that
    /// refreshes its token keeps its connection, and no one else may
    /// subscribe on it.
    @Test(.hangLimit(minutes: 1))
    func aSyncConnectionTakesMessagesOfItsClaimsRefreshedAndOfNoOneElse() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try serving.makePlayers(in: scratch)
            let secret = try file(Self.secret, named: "jwt.secret", in: scratch)
            // Keyed by `id`: the protocol's keyed changes.
            let team = "team=SELECT id, name, score FROM player WHERE team = :auth_team ORDER BY score DESC LIMIT :n"
            let served = try await serving.serve(path, ["--query", team, "--auth-jwt-secret-file", secret])
            defer { served.run.kill() }
            let bearer = { (claims: TestClaims) in [("Authorization", "Bearer " + (try await self.jwt(claims)))] }
            let opening = try await bearer(
                TestClaims(sub: "alice", team: "red", exp: inSeconds(600), iat: inSeconds(0)))
            let refreshed = try await bearer(
                TestClaims(sub: "alice", team: "red", exp: inSeconds(900), iat: inSeconds(1)))
            let client = try await SyncTestClient.connect(String(served.url.dropLast()), headers: opening)
            let subscribe: [String: Any] = ["type": "subscribe", "id": "mine", "query": "team", "params": ["n": "5"]]
            for stranger in [
                TestClaims(sub: "alice", team: "blue", exp: inSeconds(600)),
                TestClaims(sub: "bob", team: "red", exp: inSeconds(600)),
            ] {
                let refused = try await client.send(subscribe, headers: try await bearer(stranger))
                #expect(refused.status == 404, "\(stranger): \(refused.body)")
            }
            #expect(try await client.send(subscribe, headers: refreshed).status == 202)
            var results = SyncResults()
            try results.apply(try await client.next())
            let names = try (results.results["mine"]?.rows ?? []).map { row in
                try #require(try JSONSerialization.jsonObject(with: row.row) as? [Any])[1] as? String
            }
            #expect(names == ["Arthur", "Craig"], "the red team's rows, bound from the opening token's claims")
        }
    }

    /// With `--session-claims sub`, a connection takes the messages of a
    /// refreshed token whose other claims changed (Azure AD's `uti`), but
    /// still refuses another subject, and another value of a claim a query
    /// binds (`:auth_team`); by default, a changed `uti` is another owner.
    @Test(.hangLimit(minutes: 1))
    func sessionClaimsNameTheClaimsAConnectionBelongsTo() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try serving.makePlayers(in: scratch)
            let secret = try file(Self.secret, named: "jwt.secret", in: scratch)
            let team = "team=SELECT id, name, score FROM player WHERE team = :auth_team ORDER BY score DESC LIMIT :n"
            let bearer = { (claims: TestClaims) in [("Authorization", "Bearer " + (try await self.jwt(claims)))] }
            let opening = try await bearer(TestClaims(sub: "alice", team: "red", exp: inSeconds(600), uti: "first"))
            let refreshed = try await bearer(
                TestClaims(sub: "alice", team: "red", exp: inSeconds(900), uti: "second"))
            let subscribe: [String: Any] = ["type": "subscribe", "id": "mine", "query": "team", "params": ["n": "5"]]
            for sessionClaims in [nil, "sub"] as [String?] {
                var arguments = ["--query", team, "--auth-jwt-secret-file", secret]
                if let sessionClaims { arguments += ["--session-claims", sessionClaims] }
                let served = try await serving.serve(path, arguments)
                defer { served.run.kill() }
                let client = try await SyncTestClient.connect(String(served.url.dropLast()), headers: opening)
                for stranger in [
                    TestClaims(sub: "alice", team: "blue", exp: inSeconds(600), uti: "first"),
                    TestClaims(sub: "bob", team: "red", exp: inSeconds(600), uti: "first"),
                ] {
                    let refused = try await client.send(subscribe, headers: try await bearer(stranger))
                    #expect(refused.status == 404, "\(stranger): \(refused.body)")
                }
                let status = try await client.send(subscribe, headers: refreshed).status
                #expect(status == (sessionClaims == nil ? 404 : 202), "--session-claims \(sessionClaims ?? "absent")")
                if sessionClaims != nil {
                    // Without the named claim, any two tokens would be one owner.
                    let anonymous = try await bearer(TestClaims(team: "red", exp: inSeconds(600)))
                    #expect(try await get(served.url + "sync", headers: anonymous).status == 403)
                    #expect(try await client.send(subscribe, headers: anonymous).status == 403)
                }
            }
        }
    }

    @Test(.hangLimit(minutes: 1))
    func claimsCannotComeFromTheQueryStringAndBadJWTsAreRefused() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try serving.makePlayers(in: scratch)
            let secret = try file(Self.secret, named: "jwt.secret", in: scratch)
            let tokens = try file("plain-token\n", named: "tokens.txt", in: scratch)
            let served = try await serving.serve(
                path,
                ["--query", Self.mine, "--auth-jwt-secret-file", secret, "--auth-token-file", tokens])
            defer { served.run.kill() }
            let url = served.url + "queries/mine?n=5"
            func status(_ token: String, _ url: String) async throws -> (Int, String) {
                let answer = try await get(url, headers: [("Authorization", "Bearer " + token)])
                return (answer.status, (try? jsonObject(answer.body)["message"] as? String) ?? answer.body)
            }
            let red = try await jwt(TestClaims(sub: "alice", team: "red", exp: inSeconds(600)))
            let (setsClaim, setsClaimMessage) = try await status(red, url + "&auth_team=blue")
            #expect(setsClaim == 400)
            #expect(setsClaimMessage.contains("never from the query string"))
            // A JWT without the claim, a token without claims: 403.
            let noTeam = try await jwt(TestClaims(sub: "alice", exp: inSeconds(600)))
            #expect(try await status(noTeam, url).0 == 403)
            #expect(try await status("plain-token", url).0 == 403)
            // Expired, not yet valid, without exp, signed with another secret, or not a JWT: 401.
            let expired = try await jwt(TestClaims(sub: "alice", team: "red", exp: inSeconds(-10)))
            let early = try await jwt(TestClaims(sub: "alice", team: "red", exp: inSeconds(600), nbf: inSeconds(300)))
            let forever = try await jwt(TestClaims(sub: "alice", team: "red"))
            let forged = try await jwt(
                TestClaims(sub: "alice", team: "blue", exp: inSeconds(600)), secret: Self.secret + " but another")
            for (token, reason) in [
                (expired, "expired"), (early, "not valid yet"), (forever, "no exp"), (forged, "signature"),
                ("a.b.c", "not valid"),
            ] {
                let (code, message) = try await status(token, url)
                #expect(code == 401, "\(reason)")
                #expect(message.contains(reason), "\(message)")
            }
            #expect(try await status(red, url).0 == 200)
        }
    }

    @Test(
        .hangLimit(minutes: 1),
        RequiredProgram.openssl.trait)
    func anRS256JWTVerifiesWithThePublicKeyAndAnHS256OneKeyedWithThatKeyDoesNot() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try serving.makePlayers(in: scratch)
            let privateKey = scratch.file("private.pem")
            let publicKey = scratch.file("public.pem")
            let openssl = try #require(RequiredProgram.openssl.path)
            _ = try await Shell.runOnOwnThread(
                openssl,
                ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", privateKey])
            _ = try await Shell.runOnOwnThread(
                openssl, ["pkey", "-in", privateKey, "-pubout", "-out", publicKey])
            let served = try await serving.serve(path, ["--query", Self.mine, "--auth-jwt-secret-file", publicKey])
            defer { served.run.kill() }
            let keys = JWTKeyCollection()
            await keys.add(
                rsa: try Insecure.RSA.PrivateKey(pem: try String(contentsOfFile: privateKey, encoding: .utf8)),
                digestAlgorithm: .sha256)
            let claims = TestClaims(sub: "alice", team: "red", exp: inSeconds(600))
            let signed = try await keys.sign(claims)
            let answer = try await get(
                served.url + "queries/mine?n=5", headers: [("Authorization", "Bearer " + signed)])
            #expect(answer.status == 200)
            #expect(answer.body == #"{"columns":["name","score"],"rows":[["Arthur",100],["Craig",50]]}"#)
            // The public key is public: an HS256 JWT keyed with it must not pass.
            let confused = try await jwt(claims, secret: try String(contentsOfFile: publicKey, encoding: .utf8))
            let refused = try await get(
                served.url + "queries/mine?n=5", headers: [("Authorization", "Bearer " + confused)])
            #expect(refused.status == 401)
        }
    }

    @Test(.hangLimit(minutes: 1))
    func aServerBeyondLoopbackWithoutAuthenticationAndUnusableFilesAreRefusedAtStart() async throws {
        try await withTemporaryDirectory { scratch in
            let path = try serving.makePlayers(in: scratch)
            let open = try await DBWatchRun.run(["serve", path, "--query", Self.top, "--host", "0.0.0.0"])
            #expect(open.exitStatus == 64)
            #expect(open.stderr.contains("--no-auth"))
            let missing = try await DBWatchRun.run(
                ["serve", path, "--query", Self.top, "--auth-token-file", scratch.file("none.txt")])
            #expect(missing.exitStatus == 66)
            #expect(missing.stderr.contains("no such token file"))
            let empty = try file("# no token\n\n", named: "empty.txt", in: scratch)
            let noToken = try await DBWatchRun.run(["serve", path, "--query", Self.top, "--auth-token-file", empty])
            #expect(noToken.exitStatus == 64)
            #expect(noToken.stderr.contains("holds no token"))
            let short = try file("short", named: "short.secret", in: scratch)
            let shortSecret = try await DBWatchRun.run(
                ["serve", path, "--query", Self.top, "--auth-jwt-secret-file", short])
            #expect(shortSecret.exitStatus == 64)
            #expect(shortSecret.stderr.contains("at least 32 bytes"))
            let tokens = try file("a-token\n", named: "tokens.txt", in: scratch)
            let claimsWithoutJWT = try await DBWatchRun.run(
                ["serve", path, "--query", Self.mine, "--auth-token-file", tokens])
            #expect(claimsWithoutJWT.exitStatus == 64)
            #expect(claimsWithoutJWT.stderr.contains("--auth-jwt-secret-file"))
            let both = try await DBWatchRun.run(
                ["serve", path, "--query", Self.top, "--auth-token-file", tokens, "--no-auth"])
            #expect(both.exitStatus == 64)
        }
    }
}

/// The claims of the tests' JWTs.
struct TestClaims: JWTPayload {
    var sub: String?
    var team: String?
    var exp: Int?
    var nbf: Int?
    var iat: Int?
    /// A claim some identity providers change when they refresh a token (Azure AD).
    var uti: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
