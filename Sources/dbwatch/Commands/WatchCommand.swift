import ArgumentParser
import AsyncHTTPClient
import DBWatch
import Foundation

/// `dbwatch watch DB SQL…`: prints each query's result now, then again after
/// every commit that changes it, from this or any other process.
///
/// ```sh
/// dbwatch watch app.sqlite "SELECT name, score FROM player ORDER BY score DESC LIMIT 10"
/// dbwatch watch app.sqlite "SELECT * FROM player WHERE team_id = ?" --arg 2 --changes --format ndjson
/// dbwatch watch "http://127.0.0.1:8080/queries/top?n=10"   # a query `dbwatch serve` serves
/// ```
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print query results now, then again after every commit that changes them.",
        discussion: """
            The database is opened read-only and never created. The SQL may only read: writes, schema \
            changes, ATTACH, VACUUM INTO, PRAGMA changes, transaction control, load_extension(), \
            fts3_tokenizer(), highlight() and snippet() are refused (exit 67), a query that runs longer \
            than --time-limit is stopped (exit 68), and a value over 1 MB, a result over \
            --max-result-size, temporary files over --max-temp-size or a call of instr, replace, trim or \
            printf too costly to be stopped in time fails (exit 65).

            Commits by other processes (an app, a cron job, the sqlite3 shell) are detected with \
            PRAGMA data_version, checked every --interval seconds and, for a database in WAL mode, at \
            once when inotify reports a write. (In rollback-journal mode a check during another \
            process's commit could make that process fail with "database is locked", so only the poll \
            checks: lower --interval for faster updates.) A result is printed only when it changed.

            A served query: give the address of a query that `dbwatch serve` (or a server built on \
            DBWatch's integrations) serves, http://HOST:PORT/queries/NAME?PARAM=VALUE, instead of a \
            file and SQL; its values are read from the server's event stream and printed as a local \
            query's are (--once reads its current value). A dropped connection is reopened after 1, 2, \
            4 ... 30 s, said on standard error; a refusal (no such query, bad parameters, a missing or \
            invalid token: see --auth-token-file) ends the command. --arg, --interval and the limits \
            do not apply: the server runs the query.

            Formats: `table` (the default on a terminal: redrawn in place, changed cells in reverse \
            video unless NO_COLOR is set), `ndjson` (the default into a pipe or a file: one JSON \
            object per value, {"seq", "time", "query" (with several SQL), "columns", "rows"}), `json` \
            (the same objects, pretty-printed), `csv` (a header line and the rows; values separated by \
            an empty line). In JSON, blobs are {"base64": "…"}; in CSV, base64 text.

            \(ExitStatus.helpText)
            """
    )

    @Argument(
        help:
            "The SQLite database file (opened read-only; never created), or the address of a served query (http://HOST:PORT/queries/NAME?n=10)."
    )
    var database: String

    @Argument(help: "The query to watch; give several to watch each. Each holds one statement.")
    var sql: [String] = []

    @Option(
        name: .customLong("arg"), parsing: .unconditionalSingleValue, help: SQLArgument.help,
        transform: SQLArgument.parse)
    var arguments: [SQLArgument] = []

    @Option(
        help: "How to print each value: table, json, ndjson or csv (default: table on a terminal, ndjson otherwise).")
    var format: OutputFormat?

    @Flag(help: "Print the rows added, removed and changed since the previous value, instead of whole results.")
    var changes = false

    @Flag(help: "Print the current value of each query, then exit.")
    var once = false

    @Option(help: ArgumentHelp("Exit after printing this many values (all queries together).", valueName: "n"))
    var count: Int?

    @Option(
        help: ArgumentHelp("Check for other processes' commits at least every this many seconds.", valueName: "seconds")
    )
    var interval: Double = 1

    @OptionGroup var limits: QueryLimits

    @Option(help: "Colour and reverse video: auto (on a terminal unless NO_COLOR is set), always or never.")
    var color: ColorMode = .auto

    @Option(
        help: ArgumentHelp(
            "A served query: send the first line of this file as a bearer token (serve's --auth-token-file).",
            valueName: "file"))
    var authTokenFile: String?

    func validate() throws {
        if ServedQueryAddress.isAddress(database) {
            do {
                _ = try ServedQueryAddress.parse(database)
            } catch let failure as CommandFailure {
                throw ValidationError(failure.message)
            }
            if !sql.isEmpty {
                throw ValidationError(
                    "A served query's SQL is the server's: give its parameters in the address (?n=10), not SQL.")
            }
            if !arguments.isEmpty {
                throw ValidationError("--arg is for SQL; give a served query's parameters in the address.")
            }
        } else if authTokenFile != nil {
            throw ValidationError("--auth-token-file is for a served query's address (http://…).")
        }
        if sql.isEmpty && !ServedQueryAddress.isAddress(database) {
            throw ValidationError("Give the SQL to watch after the database path.")
        }
        if sql.contains(where: { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }) {
            throw ValidationError("The SQL is empty.")
        }
        if let count, count < 1 { throw ValidationError("--count must be at least 1.") }
        if once && count != nil { throw ValidationError("Give --once or --count, not both.") }
        if !(interval >= 0.01 && interval <= 3600) {
            throw ValidationError("--interval must be between 0.01 and 3600 seconds.")
        }
        if format == .csv && sql.count > 1 {
            throw ValidationError("--format csv watches one SQL; use ndjson for several.")
        }
    }

    func run() async throws {
        let interrupt = InterruptSignal(exitStatus: .success)
        Output.endWhenStandardOutputCloses()
        if ServedQueryAddress.isAddress(database) {
            try await watchServed(interrupt: interrupt)
            return
        }
        var printer = makePrinter(queries: sql)
        printer.databasePath = database

        let pool = try await DatabasePool.openForWatching(
            database, pollInterval: .seconds(interval), readers: sql.count, interrupt: interrupt)
        defer { pool.syncClose() }
        let queries = sql.map { limits.query($0, arguments: arguments) }
        var session = WatchSession(printer: printer, queryCount: queries.count, limit: once ? nil : count, once: once)
        do {
            try await session.run(queries, on: pool, interrupt: interrupt)
        } catch {
            if session.printedLiveScreen { Output.standardOutput("\n") }
            throw ErrorReport.exit(
                for: error, context: session.failedQuery.map { "query \($0 + 1)" }, sql: session.failedSQL,
                readOnlyCommand: true)
        }
        if session.printedLiveScreen { Output.standardOutput(ANSI.reset + "\n") }
    }

    /// The printer of `queries`' values (their SQL, or a served query's
    /// address) in the chosen format.
    private func makePrinter(queries: [String]) -> WatchPrinter {
        let terminal = Terminal.standardOutput(color: color)
        let format = self.format ?? (terminal.isTerminal ? .table : .ndjson)
        var printer = WatchPrinter(format: format, changes: changes, queries: queries)
        printer.redrawsInPlace = terminal.isTerminal && format == .table && !changes && !once
        printer.titlesTables = !(once && queries.count == 1)
        let color = self.color
        printer.terminal = { Terminal.standardOutput(color: color) }
        return printer
    }

    /// `watch` of a served query's address.
    private func watchServed(interrupt: InterruptSignal) async throws {
        let address = try ServedQueryAddress.parse(database)
        let authorization = try authTokenFile.map { "Bearer " + (try Self.token(in: $0)) }
        var printer = makePrinter(queries: [address.valueURL])
        printer.databasePath = address.base
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(10), read: ServedQueryReader.readTimeout)
        // A refused connection is said at once: the reader retries itself, with its notices.
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let reader = ServedQueryReader(address: address, authorization: authorization, client: client)
        var session = WatchSession(printer: printer, queryCount: 1, limit: once ? nil : count, once: once)
        do {
            try await session.run(served: reader, keyNames: await reader.keyNames(), interrupt: interrupt)
        } catch {
            try? await client.shutdown()
            if session.printedLiveScreen { Output.standardOutput("\n") }
            throw ErrorReport.exit(for: error, context: nil, readOnlyCommand: true)
        }
        try? await client.shutdown()
        if session.printedLiveScreen { Output.standardOutput(ANSI.reset + "\n") }
    }

    /// The first non-empty line of `path`, trimmed.
    private static func token(in path: String) throws -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw CommandFailure(.unavailable, "--auth-token-file \(CellText.sanitized(path)): cannot read the file.")
        }
        guard
            let line = text.split(whereSeparator: \.isNewline).lazy.map({ $0.trimmingCharacters(in: .whitespaces) })
                .first(where: { !$0.isEmpty })
        else {
            throw CommandFailure(.usage, "--auth-token-file \(CellText.sanitized(path)): the file holds no token.")
        }
        return line
    }
}

extension DatabasePool {
    /// Opens `path` for `watch` or `explain` (see
    /// ``openForWatching(_:pollInterval:readers:)``), reporting a failure as
    /// the command's exit. A signal while another connection's lock keeps
    /// it waiting ends the wait: the command exits 130.
    ///
    /// ```swift
    /// let pool = try await DatabasePool.openForWatching(path, pollInterval: nil, interrupt: interrupt)
    /// ```
    static func openForWatching(
        _ path: String, pollInterval: Duration?, readers: Int = 1, interrupt: InterruptSignal
    ) async throws -> DatabasePool {
        try await interrupt.opening(path, readOnlyCommand: true) {
            try openForWatching(path, pollInterval: pollInterval, readers: readers)
        }
    }

    /// Opens `path` the way `watch` and `explain` need it: read-only (a
    /// missing file is an error that creates nothing), `file:` paths kept
    /// plain, and other processes' commits detected when `pollInterval` is
    /// given: woken by inotify for a database in WAL mode, by the poll
    /// alone in rollback-journal mode.
    ///
    /// - Throws: ``CommandFailure`` for a missing file or a directory;
    ///   ``SQLiteError`` when SQLite cannot open it.
    static func openForWatching(_ path: String, pollInterval: Duration?, readers: Int = 1) throws -> DatabasePool {
        try DatabaseFile.checkExists(path)
        var configuration = Configuration.commandLine()
        configuration.readOnly = true
        configuration.allowsURIFilenames = false
        configuration.maximumReaderCount = max(1, min(4, readers))
        if let pollInterval {
            // In rollback-journal mode a reader blocks a commit: a check woken by the
            // writer's own journal file would land inside its transaction and make a
            // writer without a busy timeout fail with "database is locked". WAL
            // readers never block writers, so only they are woken by inotify.
            configuration.externalChangeDetection = ExternalChangeDetection(
                pollInterval: pollInterval, usesFileNotifications: DatabaseFile.isInWALMode(path))
        }
        let notice = LockWaitNotice(path: path)
        configuration.lockWaitWillStart = notice.handler
        defer { notice.stop() }
        return try DatabasePool(path: path, configuration: configuration)
    }
}
