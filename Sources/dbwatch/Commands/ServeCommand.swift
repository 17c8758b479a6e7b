import ArgumentParser
import DBWatch
import DBWatchHummingbird
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

#if canImport(Glibc)
    import Glibc
#endif

/// `dbwatch serve DB --query name=SQL…`: the queries' values over HTTP, as
/// JSON and as server-sent events after every commit that changes them,
/// with a page that shows them live.
///
/// ```sh
/// dbwatch serve app.sqlite --query top="SELECT name, score FROM player ORDER BY score DESC LIMIT :n"
/// curl -N 'http://127.0.0.1:8080/queries/top/events?n=10'
/// ```
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve queries' results over HTTP, live: JSON, server-sent events and a page for the browser.",
        discussion: """
            GET / is a page that shows each query as a live table, the cells that changed since the \
            previous value highlighted (parameters from the page's own query string: /?n=10). GET \
            /queries lists the queries: name, SQL, parameters, the tables and columns each observes, as \
            `explain` says, and its key (the columns that identify a row, or null). GET /queries/NAME?n=10 answers the current value as JSON, {"columns", \
            "rows"} as `watch --format json` writes them. GET /queries/NAME/events?n=10 is a stream of \
            server-sent events: the current value at once, then each new value (id: its version; a \
            client reconnecting with Last-Event-ID receives nothing until the value changes), an `error` \
            event with {"message", "code"} when a fetch fails (the stream goes on), a comment every 15 s \
            while idle, and `event: end` when the server stops or the database file is replaced.

            Named parameters (:n, @n, $n) come from the query string, typed as --arg types them; a \
            missing, unknown or repeated one is a 400 with a JSON body {"message"}; clients cannot send \
            SQL. Declare each parameter's type and range: --param top.n=integer:1...100 (integer:0..., \
            real:-90...90, text:64 for at most 64 characters); a value outside is a 400 naming the \
            parameter. Without it any value is bound, and SQLite reads a negative LIMIT as no limit \
            (?n=-1 returns every row). Clients of the same query and parameters share one observation, \
            which ends with its last client. An unknown query or any other path is a 404 with a JSON \
            body, any other method than GET a 405; more open streams than --max-clients a 503.

            Each distinct request streamed is an observation refetched after every commit that touches \
            it: past --max-observations (1000) at once, a stream that would start one more is a 503 with \
            Retry-After (open streams go on; one-shot answers start none). At most --max-connections \
            connections are open at once, streams or not; the next ones wait in the kernel's queue. A \
            connection that has not sent a whole request head --request-timeout (10) seconds after \
            connecting, or after its previous answer, is closed; an open stream is not. Each \
            connection's socket holds at most about twice --send-buffer (16384) bytes unsent, and a \
            client that takes no bytes for --stall-timeout (30) seconds is disconnected, however small \
            the events: the time counts from the first byte its connection does not take (the kernel \
            checks at its probes, so allow a few seconds more), so 10,000 clients that read nothing \
            hold at most about 330 MB of the kernel's memory. A client holds at most one pending value \
            (the latest).

            Requests must name the server in Host: localhost (or a name under .localhost), an IP \
            address, the --host value, or a name given with --allow-host. Any other Host is a 403 with \
            a JSON body, a request without Host (or with two) a 400, before any query runs: a web page \
            whose name an attacker rebinds to this machine's address (DNS rebinding) reads nothing.

            The database is opened read-only and never created; the server listens on 127.0.0.1 unless \
            --host says otherwise. Any other address needs --auth-token-file or --auth-jwt-secret-file, \
            or --no-auth to serve anyone who can reach it (otherwise exit 64). Each query runs once at \
            start (its parameters bound to 0, or to the value nearest 0 that --param allows) under the \
            rules and limits of `watch`: a query that writes or is refused (67), bad (65), too slow \
            (68) or too big (65) stops `serve` before it listens; a ? parameter, which a URL cannot \
            name, is refused (64). An address in use exits 69. Commits by other processes are seen as \
            `watch` sees them (--interval). A database file replaced or deleted while served ends every \
            stream with an error event, then `event: end`; restart `serve` to serve the new file.

            Operations. GET /healthz answers 200 while the process answers; GET /readyz answers 200 \
            when the database answers a read and the server is not shutting down, else 503 with a JSON \
            body: a load balancer's health checks, which need no token (the Host check still applies). \
            With --metrics, GET /metrics answers the counters in Prometheus' text format \
            (dbwatch_clients_connected, dbwatch_values_sent_total, dbwatch_fetch_duration_seconds, ...), \
            with the same Host check and tokens as the queries. --log-level debug writes one line per \
            refused request (Request refused, with dbwatch.status, dbwatch.reason, dbwatch.path and \
            dbwatch.client) to standard error.

            The address is printed on standard output once the server listens. One line per client \
            connecting and leaving goes to standard error, unless --quiet. Ctrl-C or SIGTERM ends every \
            stream with `event: end` and exits 0 within 2 s.

            Access. With --auth-token-file or --auth-jwt-secret-file, every request (the page, /queries, \
            the values and the streams) needs a token before any query runs: Authorization: Bearer \
            TOKEN, or the cookie dbwatch_token that GET /?token=TOKEN sets (HttpOnly, SameSite=Strict) \
            before it replaces the address with the same one without the token; the page's streams use \
            the cookie. Without a valid token: 401 with WWW-Authenticate: Bearer and a JSON body. Tokens \
            are compared in constant time; the cookie holds a digest of the token, not the token. A JWT \
            (HS256 secret, or RS256 with an RSA public key in PEM) must have exp in the future (and nbf, \
            if present, in the past); its claims fill the parameters named :auth_CLAIM (WHERE owner = \
            :auth_sub), which a query string can never set (400), and a JWT without a claim a query \
            needs is a 403. Clients with equal claims and parameters share one observation: a token is \
            checked once per request, never per commit. SIGHUP re-reads both files (a file that cannot \
            be used keeps the previous one, with a line on standard error) instead of stopping the \
            server. A missing or unreadable file exits 66, one without a token or a usable key 64, and \
            so does a query with :auth_ parameters without --auth-jwt-secret-file. There is no TLS: put \
            a TLS proxy in front of a server reachable beyond this machine.

            \(ExitStatus.helpText)
            """
    )

    @Argument(help: "The SQLite database file (opened read-only; never created).")
    var database: String

    @Option(
        name: .customLong("query"), parsing: .unconditionalSingleValue,
        help: ArgumentHelp(
            "A query to serve, name=SQL (repeat for each); the name is part of its URLs.", valueName: "name=SQL"),
        transform: ServedQuery.parse)
    var queries: [ServedQuery] = []

    @Option(help: ArgumentHelp("The port to listen on (0: any free port).", valueName: "port"))
    var port: Int = 8080

    @Option(
        help: ArgumentHelp(
            "The address to listen on: 127.0.0.1 (this machine only) unless given; any other needs "
                + "--auth-token-file, --auth-jwt-secret-file or --no-auth.", valueName: "address"))
    var host: String = "127.0.0.1"

    @Option(
        name: .customLong("allow-host"),
        help: ArgumentHelp(
            "A name clients may reach the server by, besides localhost, IP addresses and --host (repeat for each; "
                + ".example.com allows every name under it).",
            valueName: "name"))
    var allowedHosts: [String] = []

    @Option(help: ArgumentHelp("The most event streams open at once; more are refused with 503.", valueName: "n"))
    var maxClients: Int = 10_000

    @Flag(help: "Do not log clients connecting and leaving.")
    var quiet = false

    @Option(
        help: ArgumentHelp(
            "Write the server's log lines at this level and above to standard error, with their dbwatch.* keys "
                + "(debug: each refused request, each client connecting and leaving); "
                + "without it, only the live queries' warnings.",
            valueName: "level"))
    var logLevel: Logger.Level?

    @Flag(
        help: ArgumentHelp(
            "Serve GET /metrics in Prometheus' text format (clients, values sent and skipped, stalls), "
                + "behind the same Host check and tokens as the queries."))
    var metrics = false

    @Option(
        help: ArgumentHelp("Check for other processes' commits at least every this many seconds.", valueName: "seconds")
    )
    var interval: Double = 1

    @OptionGroup var limits: QueryLimits

    @OptionGroup var protections: ServeProtections
    @OptionGroup(title: "Access") var access: AccessOptions

    func validate() throws {
        if queries.isEmpty { throw ValidationError("Give at least one --query name=SQL.") }
        var names = Set<String>()
        for query in queries where !names.insert(query.name).inserted {
            throw ValidationError("--query \(query.name) is given twice.")
        }
        if !(0...65_535).contains(port) { throw ValidationError("--port must be between 0 and 65535.") }
        if host.isEmpty { throw ValidationError("--host is empty.") }
        for name in allowedHosts where !Self.isHostName(name) {
            throw ValidationError(
                "--allow-host \(CellText.sanitized(name)): give a host name without scheme, port or path "
                    + "(app.example.com, .example.com for every name under it, or * for any).")
        }
        try access.validate(host: host)
        if maxClients < 1 { throw ValidationError("--max-clients must be at least 1.") }
        try protections.validate(queries: queries)
        if !(interval >= 0.01 && interval <= 3600) {
            throw ValidationError("--interval must be between 0.01 and 3600 seconds.")
        }
    }

    func run() async throws {
        let interrupt = InterruptSignal(exitStatus: .success, stalled: "the server", hangUp: !access.isConfigured)
        let hangUps = access.isConfigured ? HangUpSignal() : nil
        let serveAccess = try await access.load()
        let pool = try await DatabasePool.openForWatching(
            database, pollInterval: .seconds(interval), readers: 4, interrupt: interrupt)
        let queries = try await Self.check(
            protections.applied(to: self.queries), on: pool, limits: limits, interrupt: interrupt)
        do { try access.check(queries) } catch {
            await pool.close()
            throw error
        }
        var configuration = protections.applied(to: LiveQueriesConfiguration())
        // Within the 2 s a signal gives: a client that reads nothing is cut off sooner.
        configuration.shutdownWriteGrace = .milliseconds(500)
        let live = LiveQueries(pool, configuration: configuration, logger: Self.logger(level: logLevel ?? .warning))
        let server = QueryServer(
            live: live, queries: queries, limits: limits, maxClients: maxClients, logsClients: !quiet,
            title: URL(fileURLWithPath: database).lastPathComponent, allowedHosts: [host] + allowedHosts,
            connections: protections.connections, access: serveAccess,
            metrics: metrics ? PrometheusEndpoint.bootstrap() : nil)
        let host = host
        let allowedHosts = allowedHosts
        let reloading = hangUps.map { hangUps in Task { await serveAccess.reloadOnEach(of: hangUps.events) } }
        defer { reloading?.cancel() }
        let logger = Self.logger(level: logLevel ?? .critical)
        try await Self.serve(server, host: host, port: port, logger: logger, interrupt: interrupt) { address in
            if !Self.isLoopback(host) {
                Output.standardError(
                    serveAccess.isRequired
                        ? "dbwatch: warning: listening on \(CellText.sanitized(host)), not only on this machine, "
                            + "without TLS: put a TLS proxy in front so tokens do not cross the network in clear\n"
                        : "dbwatch: warning: listening on \(CellText.sanitized(host)), not only on this machine: "
                            + "anyone who can reach it can read these queries' values (--no-auth, no TLS)\n")
            }
            if allowedHosts.contains("*") {
                Output.standardError(
                    "dbwatch: warning: --allow-host * answers requests for any name: a web page whose name is "
                        + "rebound to this machine can read these queries (use it behind a proxy that checks names)\n")
            }
            Output.standardOutput("Serving \(CellText.sanitized(database)) at \(address)\n")
        }
    }

    /// Whether `name` is a value `--allow-host` takes: a host name (a
    /// leading dot for a domain), or `*`.
    static func isHostName(_ name: String) -> Bool {
        if name == "*" { return true }
        let bare = name.hasPrefix(".") ? name.dropFirst() : Substring(name)
        return !bare.isEmpty && bare.count <= 253 && !bare.hasPrefix(".")
            && bare.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") }
    }

    /// Whether `host` names this machine only (`127.0.0.1`, `::1`, `localhost`).
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        return host == "localhost" || host == "::1" || host.hasPrefix("127.") || host.hasSuffix(".localhost")
    }

    /// Checks each query as `watch` would before it listens: prepared and
    /// run once under the untrusted-SQL policy (parameters bound to 0),
    /// which also says what it observes. A failure is the command's exit.
    static func check(
        _ queries: [ServedQuery], on pool: any DatabaseWriter, limits: QueryLimits, interrupt: InterruptSignal
    ) async throws -> [ServedQuery] {
        var checked: [ServedQuery] = []
        for var query in queries {
            let sql = query.sql
            let policy = limits.query(sql, arguments: []).policy
            do {
                let names = try await interrupt.cancellingOnSignal {
                    try await pool.read { db in
                        try db.withUntrustedSQL(policy) { try db.cachedStatement(sql: sql).parameterNames }
                    }
                }
                guard names.allSatisfy({ $0.map { !$0.hasPrefix("?") } ?? false }) else {
                    throw CommandFailure(
                        .usage,
                        "its parameters come from the URL's query string, so they need names: write :n, not ? or ?1")
                }
                query.parameters = names.compactMap { $0 }
                let declared = Set(query.parameters.map(ServedQuery.bareName))
                if let unknown = query.bounds.keys.sorted().first(where: { !declared.contains($0) }) {
                    throw CommandFailure(
                        .usage, "--param \(query.name).\(unknown): the query has no parameter :\(unknown)")
                }
                let request = query.startRequest(limits: limits)
                query.region = try await interrupt.cancellingOnSignal { try await pool.explain(request).region }
                query.key = try await interrupt.cancellingOnSignal {
                    try await pool.read { db in try request.fetch(db).keyColumnNames }
                }
            } catch is Interrupted {
                Output.standardError("dbwatch: interrupted while checking the queries\n")
                throw ExitStatus.success.exitCode
            } catch {
                await pool.close()
                throw ErrorReport.exit(for: error, context: "query \(query.name)", sql: sql, readOnlyCommand: true)
            }
            checked.append(query)
        }
        return checked
    }

    /// Runs `server` on `host:port` until a signal (then every stream ends
    /// and the database closes). An address that cannot be used exits with
    /// ``ExitStatus/cannotListen``.
    static func serve(
        _ server: QueryServer, host: String, port: Int, logger: Logger, interrupt: InterruptSignal,
        onListening: @Sendable (String) -> Void
    ) async throws {
        let running: ServerRun
        do {
            running = try await ServerRun.start(server, host: host, port: port, logger: logger)
        } catch {
            await server.live.database.close()
            throw ErrorReport.exit(for: error)
        }
        onListening(running.url)
        // Each task says whether it was the server's; only the server's end ends the wait.
        try await withThrowingTaskGroup(of: Bool.self) { tasks in
            tasks.addTask {
                try await running.wait()
                return true
            }
            tasks.addTask {
                if await interrupt.wait() != nil { try await running.stop() }
                return false
            }
            while let serverEnded = try await tasks.next() {
                if serverEnded { tasks.cancelAll() }
            }
        }
    }

    /// A logger to standard error: the server's warnings (a query that
    /// fails while served), or nothing below `level`.
    static func logger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "dbwatch") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = level
        return logger
    }
}
