import ArgumentParser
import DBWatch

#if canImport(Glibc)
    import Glibc
#endif

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
        version: dbWatchVersion,
        subcommands: [
            WatchCommand.self, ServeCommand.self, MigrateCommand.self, ExplainCommand.self, DemoCommand.self,
            ReplicateCommand.self, SlotsCommand.self,
        ]
    )

    /// Parses the command line and runs the command, as argument-parser's
    /// own `main()` does, adding a hint to a usage error caused by SQL that
    /// starts with `-` (a `--` comment), which reads as an option, and
    /// reporting an unwritable standard output for `--help` too.
    static func main() async {
        if let (position, shown) = nonUTF8Argument(Array(CommandLine.rawArguments.dropFirst())) {
            Output.standardError(
                "dbwatch: argument \(position) is not valid UTF-8: \(shown) "
                    + "(paths, SQL and --arg values must be UTF-8 text)\n")
            exit(withError: ExitCode.validationFailure)
        }
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            var command = try await asyncParseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .success {
                // `--help` and `--version`: written like every other output,
                // so that an unwritable standard output exits 74, not 0.
                Output.standardOutput(fullMessage(for: error) + "\n")
                exit(withError: nil)
            }
            if exitCode(for: error) == .validationFailure, let hint = optionLikeSQLHint(arguments) {
                Output.standardError(fullMessage(for: error) + "\n" + hint + "\n")
                exit(withError: ExitCode.validationFailure)
            }
            exit(withError: error)
        }
    }

    /// The position (from 1) of the first argument whose bytes are not
    /// UTF-8, and the argument as it can be shown (`lat\u{FFFD}.sqlite`),
    /// or `nil`. Swift replaces such bytes with U+FFFD in
    /// `CommandLine.arguments`: the path would name another file (one that
    /// `migrate` would create), and SQL or a value would silently change.
    static func nonUTF8Argument(_ arguments: [[UInt8]]) -> (position: Int, shown: String)? {
        guard let index = arguments.firstIndex(where: { String(validating: $0, as: UTF8.self) == nil }) else {
            return nil
        }
        return (index + 1, CellText.sanitized(String(decoding: arguments[index], as: UTF8.self)))
    }

    /// A hint when an argument before `--` starts with `-` and holds a
    /// space or a line break, which no option does: SQL such as
    /// `"-- comment\nSELECT 1"`, taken for an option.
    static func optionLikeSQLHint(_ arguments: [String]) -> String? {
        let beforeTerminator = Array(arguments.prefix { $0 != "--" })
        let optionLike = beforeTerminator.indices.contains { index in
            let argument = beforeTerminator[index]
            let isArgValue = index > 0 && beforeTerminator[index - 1] == "--arg"
            return !isArgValue && argument.hasPrefix("-") && argument.contains(where: \.isWhitespace)
        }
        guard optionLike else { return nil }
        return """
            Hint: SQL that starts with "-" (a -- comment) is read as an option; put -- before the SQL, \
            after the options: dbwatch watch app.sqlite --once -- "-- comment…"
            """
    }
}

extension CommandLine {
    /// The arguments' bytes as the process received them, program name
    /// first (``CommandLine/arguments`` repairs bytes that are not UTF-8).
    static var rawArguments: [[UInt8]] {
        (0..<Int(argc)).map { index in
            guard let argument = unsafeArgv[index] else { return [] }
            return Array(UnsafeRawBufferPointer(start: argument, count: strlen(argument)))
        }
    }
}
