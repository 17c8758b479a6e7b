import ArgumentParser
import DBWatch

/// The limits under which `watch`, `explain` and `serve` run a query: its time, the
/// size of its result and of its temporary files.
struct QueryLimits: ParsableArguments {
    @Option(help: ArgumentHelp("Stop a query that runs longer than this many seconds (exit 68).", valueName: "seconds"))
    var timeLimit: Double = 5

    @Option(
        help: ArgumentHelp(
            "Stop a query whose result is larger than this many bytes (exit 65).", valueName: "bytes"))
    var maxResultSize: Int = 100_000_000

    @Option(
        help: ArgumentHelp(
            "Stop a query whose temporary files (a large ORDER BY) grow larger than this many bytes (exit 65).",
            valueName: "bytes"))
    var maxTempSize: Int = 256_000_000

    func validate() throws {
        if !(timeLimit > 0 && timeLimit <= 86_400) {
            throw ValidationError("--time-limit must be more than 0 and at most 86400 seconds (a day).")
        }
        if maxResultSize < 1 { throw ValidationError("--max-result-size must be at least 1 byte.") }
        if maxTempSize < 0 { throw ValidationError("--max-temp-size must be at least 0 bytes.") }
    }

    /// The query `sql` with `arguments`, to run under these limits.
    func query(_ sql: String, arguments: [SQLArgument]) -> WatchedQuery {
        query(sql, arguments: StatementArguments(arguments.map(\.value)))
    }

    /// The query `sql` with `arguments` (named, for `serve`), to run under these limits.
    func query(_ sql: String, arguments: StatementArguments) -> WatchedQuery {
        WatchedQuery(
            sql: sql, arguments: arguments, timeLimit: .seconds(timeLimit),
            maximumResultSize: maxResultSize, maximumTemporaryStorage: maxTempSize)
    }
}
