import ArgumentParser
import DBWatch
import DBWatchHummingbird
import DBWatchTestSupport
import Logging
import Testing

@testable import dbwatch

/// `serve`'s command line and query strings, in process.
@Suite("dbwatch serve: arguments and query strings")
struct ServeParsingTests {
    /// Which `--host` values get the warning that anyone who can reach the
    /// server can read its values. (Checked here, not end to end: with a
    /// test server listening on 0.0.0.0 in the run, the integration's
    /// tests timed out under the thread sanitizer.)
    @Test func onlyLoopbackHostsListenWithoutAWarning() {
        for host in ["127.0.0.1", "127.1.2.3", "::1", "localhost", "LOCALHOST", "app.localhost"] {
            #expect(ServeCommand.isLoopback(host), "\(host)")
        }
        for host in ["0.0.0.0", "::", "192.168.1.2", "example.com", "localhost.example.com"] {
            #expect(!ServeCommand.isLoopback(host), "\(host)")
        }
    }

    @Test func anAddressBeyondLoopbackNeedsAuthenticationOrNoAuthInWords() throws {
        let query = ["serve", "db.sqlite", "--query", "a=SELECT 1"]
        #expect(throws: (any Error).self) { try DBWatchCommand.parseAsRoot(query + ["--host", "0.0.0.0"]) }
        #expect(throws: (any Error).self) { try DBWatchCommand.parseAsRoot(query + ["--host", "192.168.1.2"]) }
        for access in [["--no-auth"], ["--auth-token-file", "t.txt"], ["--auth-jwt-secret-file", "k"]] {
            let serve = try #require(
                try DBWatchCommand.parseAsRoot(query + ["--host", "0.0.0.0"] + access) as? ServeCommand)
            #expect(serve.access.noAuth == (access == ["--no-auth"]))
        }
        #expect(throws: (any Error).self) {
            try DBWatchCommand.parseAsRoot(query + ["--no-auth", "--auth-token-file", "t.txt"])
        }
        // Loopback needs nothing.
        #expect(try DBWatchCommand.parseAsRoot(query + ["--host", "::1"]) is ServeCommand)
    }

    /// `--session-claims` names claims of a JWT: it needs the JWT key, and
    /// refuses what is no claim name or what a refresh renews.
    @Test func sessionClaimsNeedJWTsAndClaimsARefreshKeeps() throws {
        let query = ["serve", "db.sqlite", "--query", "a=SELECT 1"]
        let serve = try #require(
            try DBWatchCommand.parseAsRoot(
                query + ["--auth-jwt-secret-file", "k", "--session-claims", "sub, iss"]) as? ServeCommand)
        #expect(serve.access.sessionClaimNames == ["sub", "iss"])
        for bad in [
            ["--session-claims", "sub"], ["--auth-jwt-secret-file", "k", "--session-claims", "sub,,iss"],
            ["--auth-jwt-secret-file", "k", "--session-claims", "sub,exp"],
            ["--auth-token-file", "t.txt", "--session-claims", "sub"],
        ] {
            #expect(throws: (any Error).self, "\(bad)") { try DBWatchCommand.parseAsRoot(query + bad) }
        }
    }

    @Test func serveTakesQueriesAndItsOptions() throws {
        let command = try DBWatchCommand.parseAsRoot([
            "serve", "db.sqlite", "--query", "top=SELECT name FROM player WHERE score > :min = 1", "--query",
            "count=SELECT count(*) FROM player", "--port", "0", "--host", "0.0.0.0", "--max-clients", "5", "--quiet",
            "--no-auth", "--log-level", "debug",
        ])
        let serve = try #require(command as? ServeCommand)
        #expect(serve.logLevel == .debug)
        #expect(serve.queries.map(\.name) == ["top", "count"])
        // Only the first `=` separates the name.
        #expect(serve.queries[0].sql == "SELECT name FROM player WHERE score > :min = 1")
        #expect(serve.port == 0 && serve.host == "0.0.0.0" && serve.maxClients == 5 && serve.quiet)
        let defaults = try #require(
            try DBWatchCommand.parseAsRoot(["serve", "db.sqlite", "--query", "a=SELECT 1"]) as? ServeCommand)
        #expect(defaults.port == 8080 && defaults.host == "127.0.0.1" && defaults.maxClients == 10_000)
        #expect(!defaults.quiet)
        #expect(defaults.logLevel == nil)
    }

    @Test(arguments: [
        ["serve", "db.sqlite"],
        ["serve", "db.sqlite", "--query", "SELECT 1"],
        ["serve", "db.sqlite", "--query", "=SELECT 1"],
        ["serve", "db.sqlite", "--query", "a b=SELECT 1"],
        ["serve", "db.sqlite", "--query", "a/b=SELECT 1"],
        ["serve", "db.sqlite", "--query", "a= "],
        ["serve", "db.sqlite", "--query", "a=SELECT 1", "--query", "a=SELECT 2"],
        ["serve", "db.sqlite", "--query", "a=SELECT 1", "--port", "65536"],
        ["serve", "db.sqlite", "--query", "a=SELECT 1", "--max-clients", "0"],
        ["serve", "db.sqlite", "--query", "a=SELECT 1", "--log-level", "verbose"],
    ])
    func badServeArgumentsAreUsageErrors(arguments: [String]) {
        #expect(throws: (any Error).self) { _ = try DBWatchCommand.parseAsRoot(arguments) }
    }

    @Test func queryStringValuesAreTypedAsArgTypesThem() throws {
        var query = try ServedQuery.parse("q=SELECT :a, @b")
        query.parameters = [":a", "@b"]
        let limits = try QueryLimits.parse([])
        let request = try query.request(
            queryString: [(key: "a", value: "42"), (key: "b", value: "'007'")], limits: limits)
        #expect(request.arguments.namedValues == ["a": .integer(42), "b": .text("007")])
        let errors: [[(key: Substring, value: Substring)]] = [
            [(key: "a", value: "1")],
            [(key: "a", value: "1"), (key: "b", value: "2"), (key: "c", value: "3")],
            [(key: "a", value: "1"), (key: "a", value: "2"), (key: "b", value: "3")],
            [(key: "a", value: "99999999999999999999"), (key: "b", value: "1")],
        ]
        for queryString in errors {
            #expect(throws: LiveQueriesError.self) { _ = try query.request(queryString: queryString, limits: limits) }
        }
    }

    @Test func queryStringsAreDecodedAsBrowsersEncodeThem() throws {
        func decoded(_ query: String?) throws -> [String] {
            try ServedQuery.queryParameters(query).map { "\($0.key)=\($0.value)" }
        }
        #expect(try decoded(nil) == [])
        #expect(try decoded("") == [])
        #expect(try decoded("n=Bob+Smith&m=%2B%20") == ["n=Bob Smith", "m=+ "])
        #expect(try decoded("&n=1&&m=2&") == ["n=1", "m=2"])
        #expect(try decoded("%6E=%C3%A9&flag&e=") == ["n=é", "flag=", "e="])
        #expect(try decoded("n=a=b") == ["n=a=b"])
        for bad in ["n=%FF", "n=%C3", "n=%", "n=%Z1", "%=1"] {
            #expect(throws: LiveQueriesError.self, "\(bad)") { _ = try ServedQuery.queryParameters(bad) }
        }
    }

    @Test func aStreamSlotIsGivenBackOnceAlsoWhenDropped() {
        let taken = Protected(2)
        let giveBack: @Sendable () -> Int = {
            taken.withLock {
                $0 -= 1; return $0
            }
        }
        let slot = StreamSlot(giveBack: giveBack)
        #expect(slot.release() == 1)
        #expect(slot.release() == nil)
        do { _ = StreamSlot(giveBack: giveBack) }
        #expect(taken.withLock { $0 } == 0)
    }
}
