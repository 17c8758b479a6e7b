import ArgumentParser

/// `dbwatch`: watch any SQLite database live from the terminal.
///
/// ```sh
/// dbwatch demo
/// dbwatch watch app.sqlite "SELECT name, score FROM player ORDER BY score DESC LIMIT 10"
/// ```
///
/// The only code of the project that prints. Each subcommand opens the
/// database it needs, reports errors on standard error and exits with one of
/// the codes of ``ExitStatus``.
@main
struct DBWatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dbwatch",
        abstract: "Watch any SQLite database live: query results that refresh after every commit.",
        discussion: """
            Try `dbwatch demo`, then, with `dbwatch demo --db /tmp/demo.sqlite`, \
            `dbwatch watch /tmp/demo.sqlite "SELECT name, score FROM player ORDER BY score DESC"` \
            in another terminal.

            \(ExitStatus.helpText)
            """,
        version: "0.1.0",
        subcommands: [WatchCommand.self, MigrateCommand.self, ExplainCommand.self, DemoCommand.self]
    )
}
