import DBWatch
import Foundation

/// Turns the successive values of the watched queries into the text of the
/// chosen format: whole values, or with `--changes` the differences between
/// successive values of each query.
///
/// ```swift
/// var printer = WatchPrinter(format: .ndjson, changes: false, queries: ["SELECT count(*) FROM player"])
/// let line = printer.text(for: result, query: 0, at: Date())
/// // {"seq":1,"time":"2025-01-31T09:12:45.123Z","columns":["count(*)"],"rows":[[3]]}
/// ```
struct WatchPrinter {
    /// The output format.
    let format: OutputFormat
    /// Whether to print differences instead of whole values.
    let changes: Bool
    /// The SQL of each watched query.
    let queries: [String]
    /// The database path, for the title of the live screen.
    var databasePath = ""
    /// Redraws the whole screen for each value (a terminal, `table`
    /// format, whole values); otherwise values are appended.
    var redrawsInPlace = false
    /// Prints a title line before each appended table.
    var titlesTables = true
    /// The terminal, read again for each value (it may be resized).
    var terminal: @Sendable () -> Terminal = { Terminal.standardOutput() }

    /// The number of values printed so far.
    private(set) var sequence = 0
    private var latest: [QueryResult?]
    private var beforeLatest: [QueryResult?]
    private var hasDrawnScreen = false

    /// Creates a printer.
    init(format: OutputFormat, changes: Bool, queries: [String]) {
        self.format = format
        self.changes = changes
        self.queries = queries
        latest = Array(repeating: nil, count: queries.count)
        beforeLatest = Array(repeating: nil, count: queries.count)
    }

    /// The text to write for a new value of query `index` (from 0).
    mutating func text(for result: QueryResult, query index: Int, at date: Date) -> String {
        sequence += 1
        let previous = latest[index]
        beforeLatest[index] = previous
        latest[index] = result
        let diff = changes ? ResultDiff(from: previous, to: result) : nil
        switch format {
        case .json, .ndjson:
            return record(result, diff: diff, query: index, at: date).rendered(pretty: format == .json) + "\n"
        case .csv:
            return (sequence > 1 ? "\r\n" : "") + csv(result, diff: diff)
        case .table:
            if let diff { return changeLines(diff, query: index, at: date) }
            if redrawsInPlace { return screen(at: date) }
            return appendedTable(result, previous: previous, query: index, at: date)
        }
    }

    // MARK: - JSON

    /// The JSON object for one value or one difference.
    func record(_ result: QueryResult, diff: ResultDiff?, query index: Int, at date: Date) -> JSON {
        var members: [JSON.Member] = [
            JSON.Member(key: "seq", value: .integer(sequence)),
            JSON.Member(key: "time", value: .string(Timestamp.iso8601(date))),
        ]
        if queries.count > 1 { members.append(JSON.Member(key: "query", value: .integer(index + 1))) }
        members.append(JSON.Member(key: "columns", value: result.columnsJSON))
        let rows = QueryResult.rowsJSON
        if let diff {
            members.append(
                JSON.Member(
                    key: "key", value: diff.keyColumns.map { .array($0.map { .string(result.columns[$0]) }) } ?? .null))
            members.append(JSON.Member(key: "added", value: rows(diff.added)))
            members.append(JSON.Member(key: "removed", value: rows(diff.removed)))
            let changed = diff.changed.map { row in
                JSON.object(["old": .array(row.old.map(JSON.init)), "new": .array(row.new.map(JSON.init))])
            }
            members.append(JSON.Member(key: "changed", value: .array(changed)))
        } else {
            members.append(JSON.Member(key: "rows", value: rows(result.rows)))
        }
        return .object(members)
    }

    // MARK: - CSV

    /// A CSV block: the header, then the rows, or with `--changes` a
    /// `change` column (`added`, `removed`, `before`, `after`) first.
    func csv(_ result: QueryResult, diff: ResultDiff?) -> String {
        var lines: [String] = []
        if let diff {
            lines.append(CSV.line(strings: ["change"] + result.columns))
            lines += diff.removed.map { "removed," + CSV.line(values: $0) }
            for row in diff.changed {
                lines.append("before," + CSV.line(values: row.old))
                lines.append("after," + CSV.line(values: row.new))
            }
            lines += diff.added.map { "added," + CSV.line(values: $0) }
        } else {
            lines.append(CSV.line(strings: result.columns))
            lines += result.rows.map(CSV.line(values:))
        }
        return lines.map { $0 + "\r\n" }.joined()
    }

    // MARK: - Table

    /// `#3 14:03:27 query 2: SELECT …`, cut to the width.
    func title(query index: Int, at date: Date, terminal: Terminal) -> String {
        var text = "#\(sequence) \(Timestamp.clock(date))"
        if queries.count > 1 { text += " query \(index + 1):" }
        text += " " + CellText.sanitized(queries[index].split(whereSeparator: \.isNewline).joined(separator: " "))
        if let width = terminal.width { text = CellText.truncated(text, toWidth: width) }
        return ANSI.style(text, .dim, enabled: terminal.usesColor)
    }

    /// A table appended after the previous ones.
    func appendedTable(_ result: QueryResult, previous: QueryResult?, query index: Int, at date: Date) -> String {
        let terminal = terminal()
        let renderer = TableRenderer(width: terminal.width, maxLines: nil, usesColor: terminal.usesColor)
        var lines: [String] = []
        if titlesTables { lines.append(title(query: index, at: date, terminal: terminal)) }
        lines += renderer.lines(for: result, previous: previous)
        return lines.joined(separator: "\n") + "\n" + (titlesTables ? "\n" : "")
    }

    /// The whole screen: a title line, then each query's latest table, cut
    /// to the terminal's height; drawn over the previous screen.
    mutating func screen(at date: Date) -> String {
        let terminal = terminal()
        let width = terminal.width ?? 80
        let height = terminal.height ?? 24
        var header = "dbwatch · \(CellText.sanitized(databasePath)) · #\(sequence) at \(Timestamp.clock(date))"
        header += " · Ctrl-C to stop"
        var lines = [ANSI.style(CellText.truncated(header, toWidth: width), .bold, enabled: terminal.usesColor)]
        let budget = max(4, (height - 1) / max(1, queries.count))
        for (index, sql) in queries.enumerated() {
            lines.append("")
            let flat = CellText.sanitized(sql.split(whereSeparator: \.isNewline).joined(separator: " "))
            lines.append(ANSI.style(CellText.truncated(flat, toWidth: width), .dim, enabled: terminal.usesColor))
            guard let result = latest[index] else {
                lines.append("(waiting for the first value)")
                continue
            }
            let renderer = TableRenderer(width: width, maxLines: budget - 2, usesColor: terminal.usesColor)
            lines += renderer.lines(for: result, previous: beforeLatest[index])
        }
        if lines.count > height { lines = Array(lines.prefix(height)) }
        var text = hasDrawnScreen ? ANSI.home : ANSI.home + ANSI.clearScreen
        hasDrawnScreen = true
        text += lines.map { $0 + ANSI.clearLine }.joined(separator: "\n") + ANSI.clearBelow
        return text
    }

    /// The differences as lines: `+` added, `-` removed, `~` changed (only
    /// the changed columns, old → new), each row named by its key.
    func changeLines(_ diff: ResultDiff, query index: Int, at date: Date) -> String {
        let terminal = terminal()
        let color = terminal.usesColor
        func cut(_ text: String) -> String {
            terminal.width.map { CellText.truncated(text, toWidth: $0) } ?? text
        }
        func show(_ value: DatabaseValue) -> String { CellText.sanitized(value.description) }
        func pairs(_ row: [DatabaseValue], columns: [Int]) -> String {
            columns.map { "\(CellText.sanitized(diff.columns[$0]))=\(show(row[$0]))" }.joined(separator: " ")
        }
        let allColumns = Array(diff.columns.indices)
        var lines = [title(query: index, at: date, terminal: terminal)]
        for row in diff.removed {
            lines.append(ANSI.style(cut("- " + pairs(row, columns: allColumns)), .red, enabled: color))
        }
        for row in diff.changed {
            let key = diff.keyColumns.map { pairs(row.new, columns: $0) + " " } ?? ""
            let changes = row.changedColumns.map { column in
                "\(CellText.sanitized(diff.columns[column])): \(show(row.old[column])) → \(show(row.new[column]))"
            }
            lines.append(ANSI.style(cut("~ " + key + changes.joined(separator: ", ")), .yellow, enabled: color))
        }
        for row in diff.added {
            lines.append(ANSI.style(cut("+ " + pairs(row, columns: allColumns)), .green, enabled: color))
        }
        if diff.isEmpty { lines.append("  (the same rows in another order)") }
        return lines.joined(separator: "\n") + "\n"
    }
}
