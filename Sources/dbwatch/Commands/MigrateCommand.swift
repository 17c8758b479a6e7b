import ArgumentParser
import DBWatch
import Foundation

/// `dbwatch migrate DB`: applies the `NNNN_name.sql` migrations of a
/// directory, with a progress line per migration and a summary; or tells
/// where the database stands (`--status`) or what would run (`--dry-run`).
///
/// ```sh
/// dbwatch migrate app.sqlite --dir Migrations
/// dbwatch migrate app.sqlite --status
/// ```
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the NNNN_name.sql migrations of a directory to a database.",
        discussion: """
            Each migration runs in its own transaction and is recorded, with the SHA-256 of its SQL, in \
            the table dbwatch_migrations; a failing migration is rolled back and the ones before it stay \
            applied. A migration edited after it was applied, or an applied migration the directory does \
            not have, stops everything (exit 65). The database file is created if missing, except with \
            --status and --dry-run, which never write.

            \(ExitStatus.helpText)
            """
    )

    @Argument(help: "The SQLite database file (created if missing).")
    var database: String

    @Option(help: ArgumentHelp("The directory of NNNN_name.sql migration files.", valueName: "directory"))
    var dir = "Migrations"

    @Option(help: ArgumentHelp("Apply migrations up to and including number N only.", valueName: "N"))
    var to: Int?

    @Flag(help: "Print what would be applied, and change nothing.")
    var dryRun = false

    @Flag(help: "Print which migrations are applied, pending or changed, and change nothing.")
    var status = false

    func validate() throws {
        if database.isEmpty || database == ":memory:" {
            throw ValidationError("Give a database file path: \"\" and :memory: are temporary and would save nothing.")
        }
        if let to, to < 1 { throw ValidationError("--to must be a migration number, 1 or more.") }
        if dryRun && status { throw ValidationError("Give --dry-run or --status, not both.") }
        if status && to != nil { throw ValidationError("--to applies to migrating and --dry-run, not --status.") }
    }

    func run() async throws {
        // A statement that does not stop (one costly function call) must
        // not keep the process: exiting leaves SQLite's journal, and the
        // next connection to open the file rolls the migration back.
        let interrupt = InterruptSignal(
            exitStatus: .interrupted,
            stalled: "the migration in progress",
            consequence: "a migration not committed rolls back when the database is next opened; "
                + "--status tells where it stands")
        FileSizeLimitSignal.reportAsWriteFailure()
        do {
            let command = self
            try await interrupt.cancellingOnSignal { try await command.runUntilInterrupted() }
        } catch let error as ExitCode {
            throw error
        } catch {
            throw ErrorReport.exit(for: error)
        }
    }

    private func runUntilInterrupted() async throws {
        let migrator = try Migrator(directory: dir)
        let shownPath = CellText.sanitized(database)
        if status || dryRun {
            let (queue, exists) = try openWithoutWriting()
            defer { queue.syncClose() }
            if !exists { Output.standardOutput("\(shownPath) does not exist yet: nothing is applied.\n") }
            if status {
                try await printStatus(of: queue, migrator: migrator)
            } else {
                try await printDryRun(of: queue, migrator: migrator)
            }
            return
        }
        try DatabaseFile.checkNotDirectory(database)
        let queue = try DatabaseQueue(path: database, configuration: databaseConfiguration())
        defer { queue.syncClose() }
        try await migrate(queue, migrator: migrator)
    }

    /// The database read-only, or an empty in-memory one when the file does
    /// not exist: `--status` and `--dry-run` create nothing.
    private func openWithoutWriting() throws -> (DatabaseQueue, exists: Bool) {
        guard FileManager.default.fileExists(atPath: database) else {
            return (try DatabaseQueue(configuration: .commandLine()), false)
        }
        try DatabaseFile.checkExists(database)
        var configuration = databaseConfiguration()
        configuration.readOnly = true
        return (try DatabaseQueue(path: database, configuration: configuration), true)
    }

    private func databaseConfiguration() -> Configuration {
        var configuration = Configuration.commandLine()
        configuration.allowsURIFilenames = false
        configuration.lockWaitWillStart = LockWaitNotice(path: database).handler
        return configuration
    }

    private func migrate(_ queue: DatabaseQueue, migrator: Migrator) async throws {
        let plan = try await migrator.dryRun(queue, upTo: to)
        let total = migrator.migrations.count
        let path = CellText.sanitized(database)
        guard !plan.isEmpty else {
            let status = try await migrator.status(of: queue)
            Output.standardOutput("Nothing to apply: \(path) is \(MigrateCommand.position(status, total: total)).\n")
            return
        }
        // Once, before any progress line: a damaged database is refused whole.
        try await migrator.checkIntegrity(of: queue)
        let noun = plan.count == 1 ? "migration" : "migrations"
        Output.standardOutput("Applying \(plan.count) \(noun) from \(CellText.sanitized(dir)) to \(path):\n")
        let clock = ContinuousClock()
        var applied = 0
        for migration in plan {
            Output.standardOutput("  \(migration.fileName) … ")
            let start = clock.now
            do {
                let done = try await migrator.migrate(queue, upTo: migration.number, checksIntegrity: false)
                let elapsed = MigrateCommand.milliseconds(clock.now - start)
                if done.contains(where: { $0.number == migration.number }) {
                    applied += 1
                    Output.standardOutput("applied (\(elapsed) ms)\n")
                } else {
                    Output.standardOutput("already applied by another connection\n")
                }
            } catch {
                if Task.isCancelled {
                    // Ctrl-C or SIGTERM: cancelling interrupted the statement and the migration rolled back.
                    Output.standardOutput("interrupted, rolled back\n")
                    Output.standardError("dbwatch: interrupted; the migration in progress was rolled back\n")
                    // Not cancelled itself, so that it can read where the database stands.
                    let status = try? await Task { try await migrator.status(of: queue) }.value
                    let position = status.map { MigrateCommand.position($0, total: total) } ?? "unknown"
                    Output.standardOutput(
                        "Applied \(applied) of \(plan.count) before the interruption; \(path) is \(position).\n")
                    throw ExitStatus.interrupted.exitCode
                }
                Output.standardOutput("failed, rolled back\n")
                let report = ErrorReport.text(for: error)
                let status = try? await migrator.status(of: queue)
                Output.standardError(report + "\n")
                let position = status.map { MigrateCommand.position($0, total: total) } ?? "unknown"
                Output.standardOutput(
                    "Applied \(applied) of \(plan.count) before the failure; \(path) is \(position).\n")
                throw ExitStatus(classifying: error).exitCode
            }
        }
        let status = try await migrator.status(of: queue)
        let appliedNoun = applied == 1 ? "migration" : "migrations"
        Output.standardOutput(
            "Applied \(applied) \(appliedNoun); \(path) is \(MigrateCommand.position(status, total: total)).\n")
    }

    /// `at 0002_add_score_history.sql (2 of 4 applied, 2 pending)` or
    /// `at no migration yet (0 of 4 applied)`: what the records say, not
    /// whether the database holds anything (their text shown escaped).
    static func position(_ status: MigrationStatus, total: Int) -> String {
        guard let last = status.applied.last else { return "at no migration yet (0 of \(total) applied)" }
        let state = status.pending.isEmpty ? "up to date" : "\(status.pending.count) pending"
        return "at \(CellText.sanitized(last.fileName)) (\(status.applied.count) of \(total) applied, \(state))"
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    private func printStatus(of queue: DatabaseQueue, migrator: Migrator) async throws {
        let status = try await migrator.status(of: queue)
        let total = migrator.migrations.count
        var lines = ["\(CellText.sanitized(database)): \(status.applied.count) of \(total) migrations applied"]
        let applied = Dictionary(status.applied.map { ($0.number, $0) }, uniquingKeysWith: { $1 })
        let changed = Set(status.changed.map(\.number))
        let width = (migrator.migrations.map(\.fileName.count) + status.unknown.map(\.fileName.count)).max() ?? 0
        for migration in migrator.migrations {
            let name = CellText.padded(migration.fileName, toWidth: width)
            if let record = applied[migration.number] {
                lines.append("  applied   \(name)  \(CellText.sanitized(record.appliedAt))")
            } else if changed.contains(migration.number) {
                lines.append("  CHANGED   \(name)  edited after it was applied")
            } else {
                lines.append("  pending   \(migration.fileName)")
            }
        }
        for record in status.unknown {
            let name = CellText.padded(CellText.sanitized(record.fileName), toWidth: width)
            let appliedAt = CellText.sanitized(record.appliedAt)
            lines.append("  UNKNOWN   \(name)  applied \(appliedAt), not in \(CellText.sanitized(dir))")
        }
        Output.standardOutput(lines.joined(separator: "\n") + "\n")
        if !status.matchesHistory {
            throw CommandFailure(
                .badSQL, MigrationError.historyMismatch(changed: status.changed, unknown: status.unknown).description)
        }
    }

    private func printDryRun(of queue: DatabaseQueue, migrator: Migrator) async throws {
        let plan = try await migrator.dryRun(queue, upTo: to)
        let path = CellText.sanitized(database)
        if plan.isEmpty {
            Output.standardOutput("Nothing would be applied to \(path).\n")
            return
        }
        let noun = plan.count == 1 ? "migration" : "migrations"
        var lines = ["Would apply \(plan.count) \(noun) to \(path):"]
        lines += plan.map { "  \($0.fileName)" }
        lines.append("Nothing was changed (--dry-run).")
        Output.standardOutput(lines.joined(separator: "\n") + "\n")
    }
}
