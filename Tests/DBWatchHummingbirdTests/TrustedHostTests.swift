import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// `TrustedHostMiddleware` over real sockets: a page whose name is rebound
/// to 127.0.0.1 reads nothing, a foreign page can neither open a WebSocket
/// nor write, and the names the server is reached by work.
@Suite("Trusted hosts")
struct TrustedHostTests {
    private func get(_ path: String, host: String?, extra: String = "") -> String {
        let hostLine = host.map { "Host: \($0)\r\n" } ?? ""
        return "GET \(path) HTTP/1.1\r\n\(hostLine)\(extra)Connection: close\r\n\r\n"
    }

    @Test func aForeignHostReadsNothingAndRunsNoQuery() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(trustedHosts: []) { server in
                for path in ["/top?limit=5", "/top/events?limit=5", "/nowhere"] {
                    let answer = try await rawHTTPExchange(
                        port: server.port, get(path, host: "evil.example:\(server.port)"))
                    #expect(answer.status == 403, "\(path)")
                    #expect(answer.header("content-type")?.hasPrefix("application/json") == true)
                    let body = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
                    #expect((body?["message"] as? String)?.contains("evil.example") == true)
                    #expect(!answer.body.contains("arthur"))
                }
                #expect(server.live.statistics.fetches == 0)
                #expect(server.live.statistics.clientsConnected == 0)
            }
        }
    }

    @Test func theNamesOfThisMachineAndAllowedNamesAreServed() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(trustedHosts: ["dashboard.internal", ".corp.example"]) { server in
                let port = server.port
                for host in [
                    "127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST.", "[::1]:\(port)", "app.localhost",
                    "dashboard.internal:\(port)", "corp.example", "db.corp.example:\(port)", "192.0.2.7",
                ] {
                    let answer = try await rawHTTPExchange(port: port, get("/top?limit=1", host: host))
                    #expect(answer.status == 200, "Host: \(host)")
                    #expect(answer.body.contains("arthur"), "Host: \(host)")
                    #expect(answer.header("cross-origin-resource-policy") == "same-origin")
                    #expect(answer.header("x-content-type-options") == "nosniff")
                }
                for host in ["dashboard.internal.evil.example", "evilcorp.example", "user@127.0.0.1", "127.0.0.1:x"] {
                    let answer = try await rawHTTPExchange(port: port, get("/top?limit=1", host: host))
                    #expect(answer.status == 403, "Host: \(host)")
                }
            }
        }
    }

    @Test func aRequestWithoutOneHostIsABadRequest() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(trustedHosts: []) { server in
                let none = try await rawHTTPExchange(port: server.port, get("/top", host: nil))
                #expect(none.status == 400)
                let two = try await rawHTTPExchange(
                    port: server.port, get("/top", host: "127.0.0.1", extra: "Host: evil.example\r\n"))
                #expect(two.status == 400)
                #expect(server.live.statistics.fetches == 0)
            }
        }
    }

    @Test func aWebSocketFromAForeignPageIsRefused() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(trustedHosts: []) { server in
                func upgrade(origin: String?) -> String {
                    let originLine = origin.map { "Origin: \($0)\r\n" } ?? ""
                    return "GET /top/socket HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\(originLine)"
                        + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
                }
                // Hummingbird answers a refused upgrade itself (a 400 without
                // the middleware's body): what matters is that none is a 101.
                let foreignOrigins = [
                    "http://evil.example", "null", "http://127.0.0.1:1", "http://evil.example:\(server.port)",
                ]
                for origin in foreignOrigins {
                    let foreign = try await rawHTTPExchange(port: server.port, upgrade(origin: origin))
                    #expect((400..<500).contains(foreign.status), "Origin: \(origin)")
                }
                #expect(server.live.statistics.clientsConnected == 0)
                let own = try await rawHTTPExchange(
                    port: server.port, upgrade(origin: "http://127.0.0.1:\(server.port)"))
                #expect(own.status == 101)
                // What HummingbirdWSClient sends; browsers never send a ws: origin.
                let clientOrigin = try await rawHTTPExchange(port: server.port, upgrade(origin: "ws://127.0.0.1"))
                #expect(clientOrigin.status == 101)
                let noOrigin = try await rawHTTPExchange(port: server.port, upgrade(origin: nil))
                #expect(noOrigin.status == 101)
            }
        }
    }

    @Test func oddHeadersAreRefusedWithoutStoppingTheServer() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(trustedHosts: []) { server in
                let port = server.port
                func request(_ method: String, _ headers: String, body: String = "") -> String {
                    "\(method) /players/eve/5 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(headers)"
                        + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                }
                // An empty media type, with a body: a 415, not a crash.
                for contentType in ["Content-Type:\r\n", "Content-Type: ;\r\n", "Content-Type: ;charset=utf-8\r\n"] {
                    let answer = try await rawHTTPExchange(port: port, request("POST", contentType, body: "{}"))
                    #expect(answer.status == 415, "\(contentType)")
                    #expect(answer.header("x-content-type-options") == "nosniff")
                }
                // Any method but GET, HEAD, OPTIONS and TRACE is a write.
                let propfind = try await rawHTTPExchange(
                    port: port, request("PROPFIND", "Origin: http://evil.example\r\n"))
                #expect(propfind.status == 403)
                // `websocket` among other Upgrade tokens is still an upgrade.
                let upgrade = try await rawHTTPExchange(
                    port: port,
                    "GET /top/socket HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: http://evil.example\r\n"
                        + "Upgrade: foo, WebSocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
                #expect((400..<500).contains(upgrade.status))
                let emptyHost = try await rawHTTPExchange(
                    port: port, "GET /top HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n")
                #expect(emptyHost.status == 400)
                let badPort = try await rawHTTPExchange(
                    port: port, "GET /top HTTP/1.1\r\nHost: localhost:99999\r\nConnection: close\r\n\r\n")
                #expect(badPort.status == 403)
                // Still serving.
                let answer = try await rawHTTPExchange(
                    port: port, "GET /top?limit=1 HTTP/1.1\r\nHost: localhost:\(port)\r\nConnection: close\r\n\r\n")
                #expect(answer.status == 200)
                let names = try await server.database.read { db in
                    try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY name")
                }
                #expect(names == ["arthur", "barbara"])
            }
        }
    }

    @Test func aCrossSiteWriteIsRefusedBeforeTheRouteRuns() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(trustedHosts: []) { server in
                let port = server.port
                func post(_ name: String, headers: String, body: String) -> String {
                    "POST /players/\(name)/5 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(headers)"
                        + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                }
                // A "simple" request, which browsers send cross-site without asking first.
                let plain = try await rawHTTPExchange(
                    port: port,
                    post("mallory", headers: "Content-Type: text/plain\r\nOrigin: http://evil.example\r\n", body: "{}"))
                #expect(plain.status == 403)
                let form = try await rawHTTPExchange(
                    port: port,
                    post("mallory", headers: "Content-Type: application/x-www-form-urlencoded\r\n", body: "a=1"))
                #expect(form.status == 415)
                let foreignJSON = try await rawHTTPExchange(
                    port: port,
                    post(
                        "mallory", headers: "Content-Type: application/json\r\nOrigin: http://evil.example\r\n",
                        body: "{}"))
                #expect(foreignJSON.status == 403)
                let names = try await server.database.read { db in
                    try db.fetchAll(String.self, sql: "SELECT name FROM player ORDER BY name")
                }
                #expect(names == ["arthur", "barbara"])

                let own = try await rawHTTPExchange(
                    port: port,
                    post(
                        "carol", headers: "Content-Type: application/json\r\nOrigin: http://127.0.0.1:\(port)\r\n",
                        body: "{}"))
                #expect(own.status == 201)
                let empty = try await rawHTTPExchange(port: port, post("dave", headers: "", body: ""))
                #expect(empty.status == 201)
            }
        }
    }
}

/// The matching rules of `TrustedHosts`, without a server.
@Suite("Trusted host names")
struct TrustedHostNameTests {
    @Test func loopbackNamesAndAddressesAreAlwaysTrusted() {
        let hosts = TrustedHosts()
        for authority in [
            "localhost", "localhost:1", "a.b.localhost:80", "127.0.0.1:8080", "[::1]", "[::1]:9", "0.0.0.0",
        ] {
            #expect(hosts.allows(authority: authority), "\(authority)")
        }
        for authority in ["", ":80", "evil.example", "localhost.evil.example", "[::1", "[evil]:80", "127.0.0.1:123456"]
        {
            #expect(!hosts.allows(authority: authority), "\(authority)")
        }
    }

    @Test func givenNamesMatchExactlyOrAsADomain() {
        let hosts = TrustedHosts(["App.Example.com.", ".internal"])
        #expect(hosts.allows(authority: "app.example.com:443"))
        #expect(hosts.allows(authority: "APP.EXAMPLE.COM"))
        #expect(!hosts.allows(authority: "x.app.example.com"))
        #expect(hosts.allows(authority: "internal"))
        #expect(hosts.allows(authority: "db.internal"))
        #expect(!hosts.allows(authority: "notinternal"))
        #expect(TrustedHosts(["*"]).allows(authority: "anything.example"))
        // Starlette's form of a domain.
        #expect(TrustedHosts(["*.example.com"]).allows(authority: "a.example.com"))
        #expect(!TrustedHosts(["*.example.com"]).allows(authority: "evil.com"))
    }
}
