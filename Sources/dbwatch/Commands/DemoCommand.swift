import ArgumentParser
import DBWatch
import DBWatchHummingbird
import Foundation

/// `dbwatch demo`: a database with the demo schema, a simulated writer, and
/// a live leaderboard drawn from observations, until Ctrl-C.
///
/// ```sh
/// dbwatch demo                          # in memory
/// dbwatch demo --db /tmp/demo.sqlite    # a file another terminal can watch
/// dbwatch demo --serve 8080             # and live in a browser at http://127.0.0.1:8080/
/// ```
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a simulated game and show its live leaderboard, until Ctrl-C.",
        discussion: """
            Creates a database (in memory, or at --db), applies the demo schema (the Migrations/ files, \
            carried inside the binary), adds four teams and ten players, then changes scores and lets \
            players join, leave and change teams, a few times a second. The leaderboard, the team \
            totals and the latest score changes are three observed queries: each is refetched only \
            after a commit that touches what it reads.

            With --db, other processes see the writes: try \
            `dbwatch watch /tmp/demo.sqlite "SELECT name, score FROM player ORDER BY score DESC"` in \
            another terminal, or change a score with the sqlite3 shell and see the leaderboard follow.

            \(ExitStatus.helpText)
            """
    )

    @Option(
        help: ArgumentHelp(
            "Keep the database in this file (created if missing) so that others can watch it.", valueName: "path"))
    var db: String?

    @Option(help: "The seed of the simulated writes; the same seed replays the same game (default: random).")
    var seed: UInt64?

    @Option(help: ArgumentHelp("Simulated writes per second.", valueName: "n"))
    var rate: Double = 4

    @Option(
        help: ArgumentHelp("Stop by itself after this many seconds (default: run until Ctrl-C).", valueName: "seconds"))
    var duration: Double?

    @Option(help: "Colour: auto (on a terminal unless NO_COLOR is set), always or never.")
    var color: ColorMode = .auto

    @Option(
        name: .customLong("serve"),
        help: ArgumentHelp(
            "Also serve the leaderboard and team totals live over HTTP on 127.0.0.1:PORT, as `dbwatch serve` does "
                + "(0: any free port); the screen shows the address to open in a browser.",
            valueName: "port"))
    var servePort: Int?

    func validate() throws {
        if !(rate >= 0.01 && rate <= 1000) {
            throw ValidationError("--rate must be between 0.01 and 1000 writes per second.")
        }
        if let duration, !(duration > 0 && duration <= 86_400 * 365) {
            throw ValidationError("--duration must be more than 0 and at most 31536000 seconds (a year).")
        }
        if let servePort, !(0...65_535).contains(servePort) {
            throw ValidationError("--serve takes a port between 0 and 65535.")
        }
        if let db, db.isEmpty || db == ":memory:" {
            throw ValidationError("--db takes a file path; omit it for memory.")
        }
    }

    func run() async throws {
        let interrupt = InterruptSignal()
        FileSizeLimitSignal.reportAsWriteFailure()
        let seed = self.seed ?? UInt64.random(in: 1...999_999)
        let database = try await prepareDatabase(seed: seed, interrupt: interrupt)
        defer { database.syncClose() }
        let source = db.map { "file " + CellText.sanitized(URL(fileURLWithPath: $0).lastPathComponent) }
        var screen = DemoScreen(source: source ?? "in memory", seed: seed)
        if let db {
            let path = CellText.sanitized(db).contains(" ") ? "'\(CellText.sanitized(db))'" : CellText.sanitized(db)
            screen.hint =
                "In another terminal: dbwatch watch \(path) \"SELECT name, score FROM player ORDER BY score DESC\""
        }
        let serving = try await startServing(database, interrupt: interrupt)
        if let serving {
            screen.hint = "In a browser: \(serving.url)?limit=10" + (screen.hint.map { "\n" + $0 } ?? "")
        }
        let terminal = Terminal.standardOutput(color: color)
        var session = DemoSession(
            database: database, screen: screen, simulation: DemoSimulation(seed: seed), color: color,
            interval: .seconds(1 / rate), duration: duration.map { .seconds($0) })
        if terminal.isTerminal { Output.standardOutput(ANSI.alternateScreen + ANSI.hideCursor + ANSI.clearScreen) }
        do {
            try await session.run(interrupt: interrupt)
            try await serving?.stop()
        } catch {
            try? await serving?.stop()
            if terminal.isTerminal { Output.standardOutput(ANSI.reset + ANSI.showCursor + ANSI.normalScreen) }
            throw ErrorReport.exit(for: error, context: "the demo stopped")
        }
        if terminal.isTerminal {
            Output.standardOutput(ANSI.reset + ANSI.showCursor + ANSI.normalScreen)
            Output.standardOutput(session.finalFrame + "\n")
        }
        let writes = session.screen.writes
        Output.standardOutput(
            "Demo stopped after \(writes) write\(writes == 1 ? "" : "s"). Replay it: dbwatch demo --seed \(seed)\n")
    }

    /// With `--serve`, the leaderboard and the team totals served as
    /// `dbwatch serve` serves queries; the database stays open when the
    /// server stops (the demo closes it).
    private func startServing(_ database: any DatabaseWriter, interrupt: InterruptSignal) async throws -> ServerRun? {
        guard let servePort else { return nil }
        let limits = try QueryLimits.parse([])
        let queries = try await ServeCommand.check(
            [
                ServedQuery(name: "leaderboard", sql: LeaderboardRequest.sql),
                ServedQuery(name: "teams", sql: TeamTotalsRequest.sql),
            ], on: database, limits: limits, interrupt: interrupt)
        var configuration = LiveQueriesConfiguration()
        configuration.closesDatabaseOnShutdown = false
        configuration.shutdownWriteGrace = .milliseconds(500)
        let live = LiveQueries(database, configuration: configuration, logger: ServeCommand.logger(level: .critical))
        let server = QueryServer(
            live: live, queries: queries, limits: limits, maxClients: 10_000, logsClients: false,
            title: db.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "dbwatch demo")
        do {
            return try await ServerRun.start(server, host: "127.0.0.1", port: servePort)
        } catch {
            await database.close()
            throw ErrorReport.exit(for: error)
        }
    }

    /// Opens, migrates and seeds the database, before the screen starts.
    /// With `--db`, another connection's lock may make it wait: the command
    /// says so once, and a signal meanwhile ends the wait (exit 130).
    private func prepareDatabase(seed: UInt64, interrupt: InterruptSignal) async throws -> any DatabaseWriter {
        let notice = db.map { LockWaitNotice(path: $0) }
        defer { notice?.stop() }
        let command = self
        return try await interrupt.opening(db ?? ":memory:") {
            let database = try command.openDatabase(lockWaitWillStart: notice?.handler)
            do {
                try await Migrator(migrations: DemoMigrations.migrations).migrate(database)
                _ = try await database.write { db in try DemoSimulation.seedIfEmpty(db, seed: seed) }
            } catch {
                await database.close()
                throw error
            }
            return database
        }
    }

    /// An in-memory queue, or a pool on `--db` that also sees other
    /// processes' commits.
    private func openDatabase(lockWaitWillStart: (@Sendable () -> Void)?) throws -> any DatabaseWriter {
        guard let db else { return try DatabaseQueue(configuration: .commandLine()) }
        try DatabaseFile.checkNotDirectory(db)
        var configuration = Configuration.commandLine()
        configuration.allowsURIFilenames = false
        configuration.externalChangeDetection = ExternalChangeDetection(pollInterval: .seconds(1))
        configuration.lockWaitWillStart = lockWaitWillStart
        return try DatabasePool(path: db, configuration: configuration)
    }
}
