import ArgumentParser
import DBWatch
import Foundation

/// `dbwatch demo`: a database with the demo schema, a simulated writer, and
/// a live leaderboard drawn from observations, until Ctrl-C.
///
/// ```sh
/// dbwatch demo                          # in memory
/// dbwatch demo --db /tmp/demo.sqlite    # a file another terminal can watch
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

    func validate() throws {
        if !(rate >= 0.01 && rate <= 1000) {
            throw ValidationError("--rate must be between 0.01 and 1000 writes per second.")
        }
        if let duration, !(duration > 0 && duration <= 86_400 * 365) {
            throw ValidationError("--duration must be more than 0 and at most 31536000 seconds (a year).")
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
        defer { database.close() }
        let source = db.map { "file " + CellText.sanitized(URL(fileURLWithPath: $0).lastPathComponent) }
        var screen = DemoScreen(source: source ?? "in memory", seed: seed)
        if let db {
            let path = CellText.sanitized(db).contains(" ") ? "'\(CellText.sanitized(db))'" : CellText.sanitized(db)
            screen.hint =
                "In another terminal: dbwatch watch \(path) \"SELECT name, score FROM player ORDER BY score DESC\""
        }
        let terminal = Terminal.standardOutput(color: color)
        var session = DemoSession(
            database: database, screen: screen, simulation: DemoSimulation(seed: seed), color: color,
            interval: .seconds(1 / rate), duration: duration.map { .seconds($0) })
        if terminal.isTerminal { Output.standardOutput(ANSI.alternateScreen + ANSI.hideCursor + ANSI.clearScreen) }
        do {
            try await session.run(interrupt: interrupt)
        } catch {
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
