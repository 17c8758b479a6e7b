import ArgumentParser
import DBWatch

/// `dbwatch explain DB SQL`: what a query observes (tables and columns), in
/// words, and SQLite's query plan.
///
/// ```sh
/// dbwatch explain app.sqlite "SELECT name, score FROM player WHERE score > 10"
/// ```
struct ExplainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Tell which tables and columns a query observes, in words, and its query plan.",
        discussion: """
            The query runs once, read-only and under the same rules as `watch`.

            \(ExitStatus.helpText)
            """
    )

    @Argument(help: "The SQLite database file (opened read-only; never created).")
    var database: String

    @Argument(help: "The query to explain (one statement).")
    var sql: String

    @Option(
        name: .customLong("arg"), parsing: .unconditionalSingleValue, help: SQLArgument.help,
        transform: SQLArgument.parse)
    var arguments: [SQLArgument] = []

    @Flag(inversion: .prefixedNo, help: "Print SQLite's query plan (EXPLAIN QUERY PLAN).")
    var plan = true

    @OptionGroup var limits: QueryLimits

    func validate() throws {
        if sql.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { throw ValidationError("The SQL is empty.") }
    }

    func run() async throws {
        let interrupt = InterruptSignal(exitStatus: .interrupted)
        let pool = try await DatabasePool.openForWatching(database, pollInterval: nil, interrupt: interrupt)
        defer { pool.syncClose() }
        let query = limits.query(sql, arguments: arguments)
        let sql = self.sql
        let plan = self.plan
        let policy = query.policy
        do {
            // Ctrl-C or SIGTERM cancels the reads, which interrupts the running statement.
            let text = try await interrupt.cancellingOnSignal {
                let explanation = try await pool.explain(query)
                var text = ExplainCommand.words(for: explanation, sql: sql)
                if plan {
                    // `EXPLAIN QUERY PLAN EXPLAIN …` is a syntax error: an
                    // EXPLAIN statement has no plan of its own to show.
                    let steps = try await pool.read { db -> [Row]? in
                        if try db.cachedStatement(sql: sql).isExplain { return nil }
                        return try db.withUntrustedSQL(policy) {
                            try db.fetchAll(sql: "EXPLAIN QUERY PLAN " + sql, arguments: query.arguments)
                        }
                    }
                    if let steps {
                        text +=
                            "\n\nQuery plan:\n" + QueryPlan(rows: steps).lines.map { "  " + $0 }.joined(separator: "\n")
                    } else {
                        text += "\n\nQuery plan: none shown, the query is an EXPLAIN statement itself."
                    }
                }
                return text
            }
            Output.standardOutput(text + "\n")
        } catch is Interrupted {
            Output.standardError("dbwatch: interrupted; the query was stopped\n")
            throw ExitStatus.interrupted.exitCode
        } catch {
            throw ErrorReport.exit(for: error, sql: sql, readOnlyCommand: true)
        }
    }

    /// The explanation in words: the library's one line per table, then
    /// when a change makes the query refetch. Names from the schema are
    /// shown with their control characters escaped.
    static func words(for explanation: QueryExplanation, sql: String) -> String {
        let region = explanation.region
        let flat = CellText.sanitized(sql.split(whereSeparator: \.isNewline).joined(separator: " "))
        var lines = ["Query: " + flat, ""]
        lines += explanation.description.split(separator: "\n", omittingEmptySubsequences: false)
            .map { CellText.sanitized(String($0)) }
        guard !region.isEmpty else { return lines.joined(separator: "\n") }
        lines.append("")
        lines.append("DBWatch refetches it after a commit that:")
        for key in region.tables.keys.sorted() {
            let table = CellText.sanitized("\(key)")
            switch region.tables[key]! {
            case .all:
                lines.append("  - changes anything in \(table)")
            case .columns(let columns) where columns.isEmpty:
                lines.append("  - inserts or deletes rows of \(table)")
            case .columns(let columns):
                let names = columns.sorted().map(CellText.sanitized).joined(separator: ", ")
                let noun = columns.count == 1 ? "column" : "columns"
                lines.append("  - inserts or deletes rows of \(table), or updates its \(noun) \(names)")
            }
        }
        lines.append("Other commits made through DBWatch cost it nothing. Commits by other processes")
        lines.append("(what `dbwatch watch` sees) do not say what they changed: each one refetches the")
        lines.append("query, and only a result that changed is printed.")
        return lines.joined(separator: "\n")
    }
}
