import DBWatch
import Foundation
import Testing

@testable import dbwatch

@Suite("Rendering values")
struct RenderingTests {
    let players = QueryResult(
        columns: ["id", "name", "score"],
        rows: [[.integer(1), .text("Arthur"), .integer(120)], [.integer(2), .text("Barbara"), .integer(80)]],
        keyColumns: [0])

    @Test func tableIsAligned() {
        let lines = TableRenderer(width: nil, maxLines: nil, usesColor: false).lines(for: players)
        #expect(
            lines == [
                "id │ name    │ score",
                "───┼─────────┼──────",
                " 1 │ Arthur  │   120",
                " 2 │ Barbara │    80",
                "(2 rows)",
            ])
    }

    @Test func tableFitsTheWidthWithEllipses() {
        let wide = QueryResult(
            columns: ["id", "text"], rows: [[.integer(1), .text(String(repeating: "x", count: 100))]], keyColumns: nil)
        let lines = TableRenderer(width: 30, maxLines: nil, usesColor: false).lines(for: wide)
        for line in lines { #expect(CellText.width(of: line) <= 30, "\(line)") }
        #expect(lines[2].hasSuffix("x…"))
        #expect(lines[2].hasPrefix(" 1 │ xxx"))
    }

    @Test func tooManyColumnsAreCounted() {
        let columns = (1...40).map { "c\($0)" }
        let result = QueryResult(columns: columns, rows: [columns.map { _ in .integer(1) }], keyColumns: nil)
        let lines = TableRenderer(width: 40, maxLines: nil, usesColor: false).lines(for: result)
        for line in lines { #expect(CellText.width(of: line) <= 40, "\(line)") }
        #expect(lines.last?.contains("more columns not shown") == true)
    }

    @Test func rowsBeyondTheHeightAreCounted() {
        let rows = (1...50).map { [DatabaseValue.integer(Int64($0))] }
        let lines = TableRenderer(width: 80, maxLines: 10, usesColor: false)
            .lines(for: QueryResult(columns: ["n"], rows: rows, keyColumns: nil))
        #expect(lines.count <= 10)
        #expect(lines.last == "(50 rows, 44 not shown)")
    }

    @Test func changedCellsAreInReverseVideoOnlyWithColor() {
        var after = players
        after.rows[1][2] = .integer(95)
        after.rows.append([.integer(3), .text("Craig"), .integer(10)])
        after = QueryResult(columns: after.columns, rows: after.rows, keyColumns: [0])
        let colored = TableRenderer(width: nil, maxLines: nil, usesColor: true).lines(for: after, previous: players)
        #expect(colored[3].contains("\u{1B}[7m   95\u{1B}[27m"))
        #expect(!colored[2].contains("\u{1B}[7m"))
        #expect(colored[4].contains("\u{1B}[7m 3\u{1B}[27m"))
        let plain = TableRenderer(width: nil, maxLines: nil, usesColor: false).lines(for: after, previous: players)
        #expect(!plain.joined().contains("\u{1B}"))
    }

    @Test func changedCellsAreMatchedByKeyWhenRowsMove() {
        let before = players
        let after = QueryResult(
            columns: players.columns, rows: [players.rows[1], players.rows[0]], keyColumns: [0])
        let cells = TableRenderer(width: nil, maxLines: nil, usesColor: true).changedCells(after, previous: before)
        #expect(cells.isEmpty)
    }

    @Test func controlCharactersInValuesAreMadeVisible() {
        let hostile = QueryResult(columns: ["t"], rows: [[.text("a\nb\u{1B}[2Jc\t")]], keyColumns: nil)
        let lines = TableRenderer(width: nil, maxLines: nil, usesColor: false).lines(for: hostile)
        #expect(lines[2] == "a\\nb\\x1b[2Jc\\t")
        #expect(CellText.sanitized("\u{202E}evil") == "\\u{202e}evil")
    }

    @Test func displayWidth() {
        #expect(CellText.width(of: "日本語") == 6)
        #expect(CellText.width(of: "é") == 1)
        #expect(CellText.truncated("日本語", toWidth: 4) == "日…")
        #expect(CellText.truncated("Barbara", toWidth: 4) == "Bar…")
        #expect(CellText.visibleWidth(of: "\u{1B}[1mab\u{1B}[22m") == 2)
    }

    @Test func ndjsonRecords() {
        var printer = WatchPrinter(format: .ndjson, changes: false, queries: ["SELECT …"])
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let line = printer.text(for: players, query: 0, at: date)
        #expect(
            line == #"{"seq":1,"time":"2023-11-14T22:13:20.250Z","columns":["id","name","score"],"#
                + #""rows":[[1,"Arthur",120],[2,"Barbara",80]]}"# + "\n")
        var several = WatchPrinter(format: .ndjson, changes: false, queries: ["A", "B"])
        _ = several.text(for: players, query: 0, at: date)
        #expect(
            several.text(for: players, query: 1, at: date).hasPrefix(
                #"{"seq":2,"time":"2023-11-14T22:13:20.250Z","query":2,"#))
    }

    @Test func jsonValues() {
        #expect(JSON(.blob(Data([0, 1, 2, 255]))).rendered() == #"{"base64":"AAEC/w=="}"#)
        #expect(
            JSON(.text("quote\" back\\ line\n tab\t nul\u{0} é")).rendered()
                == #""quote\" back\\ line\n tab\t nul\u0000 é""#)
        #expect(JSON(.real(1.5)).rendered() == "1.5")
        #expect(JSON(.real(.infinity)).rendered() == "1e999")
        #expect(JSON(.integer(.min)).rendered() == "-9223372036854775808")
        #expect(JSON(.null).rendered() == "null")
        let pretty = JSON.object(["rows": .array([.array([.number("1"), .string("a")])])]).rendered(pretty: true)
        #expect(pretty == "{\n  \"rows\": [\n    [1, \"a\"]\n  ]\n}")
    }

    @Test func csvFields() {
        var printer = WatchPrinter(format: .csv, changes: false, queries: ["SELECT …"])
        let result = QueryResult(
            columns: ["a", "b,c"],
            rows: [[.null, .text("")], [.text("say \"hi\""), .text("x\ny")], [.blob(Data([1])), .real(0.5)]],
            keyColumns: nil)
        let text = printer.text(for: result, query: 0, at: Date())
        #expect(text == "a,\"b,c\"\r\n,\"\"\r\n\"say \"\"hi\"\"\",\"x\ny\"\r\nAQ==,0.5\r\n")
        #expect(printer.text(for: result, query: 0, at: Date()).hasPrefix("\r\na,"))
    }

    @Test func keyedDifferences() {
        let after = QueryResult(
            columns: players.columns,
            rows: [[.integer(2), .text("Barbara"), .integer(95)], [.integer(3), .text("Craig"), .integer(10)]],
            keyColumns: [0])
        let diff = ResultDiff(from: players, to: after)
        #expect(diff.keyColumns == [0])
        #expect(diff.added == [[.integer(3), .text("Craig"), .integer(10)]])
        #expect(diff.removed == [[.integer(1), .text("Arthur"), .integer(120)]])
        #expect(diff.changed.map(\.changedColumns) == [[2]])
        let first = ResultDiff(from: nil, to: players)
        #expect(first.added == players.rows && first.removed.isEmpty)
    }

    @Test func unkeyedDifferencesAreAMultiset() {
        let before = QueryResult(columns: ["n"], rows: [[.integer(1)], [.integer(1)], [.integer(2)]], keyColumns: nil)
        let after = QueryResult(columns: ["n"], rows: [[.integer(2)], [.integer(1)], [.integer(3)]], keyColumns: nil)
        let diff = ResultDiff(from: before, to: after)
        #expect(diff.keyColumns == nil)
        #expect(diff.added == [[.integer(3)]])
        #expect(diff.removed == [[.integer(1)]])
        #expect(diff.changed.isEmpty)
    }

    @Test func repeatedKeysAreNoKey() {
        let result = QueryResult(columns: ["id"], rows: [[.integer(1)], [.integer(1)]], keyColumns: [0])
        #expect(result.keyColumns == nil)
    }

    @Test func changesAsText() {
        var printer = WatchPrinter(format: .table, changes: true, queries: ["SELECT * FROM player"])
        printer.terminal = { Terminal(isTerminal: false, usesColor: false, width: nil, height: nil) }
        _ = printer.text(for: players, query: 0, at: Date())
        let after = QueryResult(
            columns: players.columns,
            rows: [[.integer(2), .text("Barbara"), .integer(95)], [.integer(3), .text("Craig"), .integer(10)]],
            keyColumns: [0])
        let lines = printer.text(for: after, query: 0, at: Date()).split(separator: "\n").map(String.init)
        #expect(
            lines.dropFirst() == [
                "- id=1 name='Arthur' score=120", "~ id=2 score: 80 → 95", "+ id=3 name='Craig' score=10",
            ])
    }

    /// Text that is not valid UTF-8 is shown by its bytes in every format,
    /// and a change of those bytes (or of the normalization form) is a change.
    @Test func textIsShownAndComparedByItsBytes() {
        let bytes = Data([0xc3, 0xa9, 0xf0, 0x9f, 0x98, 0x61, 0x0a, 0xff, 0x2c])
        #expect(CellText.escapingInvalidUTF8(bytes) == "é\\xf0\\x9f\\x98a\n\\xff,")
        #expect(TableRenderer.text(for: .invalidUTF8Text(bytes)) == "é\\xf0\\x9f\\x98a\\n\\xff,")
        #expect(CSV.field(.invalidUTF8Text(bytes)) == "\"é\\xf0\\x9f\\x98a\n\\xff,\"")
        #expect(JSON(.invalidUTF8Text(Data([0x61, 0xfe]))).rendered() == #"{"text_base64":"Yf4="}"#)

        var printer = WatchPrinter(format: .table, changes: true, queries: ["SELECT id, v FROM t"])
        printer.terminal = { Terminal(isTerminal: false, usesColor: false, width: nil, height: nil) }
        func result(_ values: DatabaseValue...) -> QueryResult {
            QueryResult(
                columns: ["id", "v"], rows: values.enumerated().map { [.integer(Int64($0.offset)), $0.element] },
                keyColumns: [0])
        }
        _ = printer.text(for: result(.invalidUTF8Text(Data([0xfe])), .text("\u{e9}")), query: 0, at: Date())
        let after = result(.invalidUTF8Text(Data([0xff])), .text("e\u{301}"))
        let diff = ResultDiff(from: result(.invalidUTF8Text(Data([0xfe])), .text("\u{e9}")), to: after)
        #expect(diff.changed.map(\.changedColumns) == [[1], [1]])
        let lines = printer.text(for: after, query: 0, at: Date()).split(separator: "\n").map(String.init)
        #expect(lines.dropFirst().first == "~ id=0 v: CAST(x'fe' AS TEXT) → CAST(x'ff' AS TEXT)")
    }

    @Test func caretUnderTheErrorOffset() {
        #expect(ErrorReport.caretLines(sql: "SELECT * FORM t", offset: 9) == ["    SELECT * FORM t", "             ^"])
        #expect(
            ErrorReport.caretLines(sql: "SELECT *\nFROM t WHERE 'é' = nope", offset: 29)
                == ["  at line 2 of the SQL:", "    FROM t WHERE 'é' = nope", "                       ^"])
    }

    @Test func exitStatuses() {
        #expect(ExitStatus(classifying: SQLiteError(code: .auth)) == .refused)
        #expect(ExitStatus(classifying: SQLiteError(code: .interrupt)) == .timeLimit)
        #expect(ExitStatus(classifying: SQLiteError(code: .error)) == .badSQL)
        #expect(ExitStatus(classifying: SQLiteError(code: .misuse)) == .badSQL)
        #expect(ExitStatus(classifying: SQLiteError(code: .notADatabase)) == .unavailable)
        #expect(ExitStatus(classifying: SQLiteError(code: .corrupt)) == .unavailable)
        #expect(ExitStatus(classifying: SQLiteError(code: .cannotOpen)) == .unavailable)
        #expect(ExitStatus(classifying: SQLiteError(code: .ioErrorRead)) == .unavailable)
        #expect(ExitStatus(classifying: SQLiteError(code: .ioErrorShortRead)) == .unavailable)
        #expect(ExitStatus(classifying: SQLiteError(code: .ioError)) == .unavailable)
        #expect(ExitStatus(classifying: SQLiteError(code: .full)) == .writeFailed)
        #expect(ExitStatus(classifying: SQLiteError(code: .ioErrorWrite)) == .writeFailed)
        #expect(ExitStatus(classifying: SQLiteError(code: .ioErrorFsync)) == .writeFailed)
        #expect(ExitStatus(classifying: SQLiteError(code: .ioErrorTruncate)) == .writeFailed)
        #expect(ExitStatus(classifying: MigrationError.noSuchMigration(9)) == .usage)
        #expect(ExitStatus(classifying: MigrationError.unreadable(path: "x", reason: "y")) == .unavailable)
        #expect(ExitStatus(classifying: MigrationError.gap(missing: 2...2, next: "x")) == .badSQL)
        #expect(ExitStatus(classifying: CancellationError()) == .failure)
        #expect(ExitStatus(classifying: Interrupted(signal: SIGINT)) == .interrupted)
        #expect(ExitStatus(classifying: SQLiteError(code: .busy)) == .locked)
        #expect(ExitStatus(classifying: SQLiteError(code: .locked)) == .locked)
    }

    /// The headline says what is wrong in the user's words, not only SQLite's.
    @Test func headlinesNameTheCause() {
        func headline(_ code: ResultCode, readOnlyCommand: Bool = false) -> String {
            ErrorReport.headline(of: SQLiteError(code: code, message: "m"), readOnlyCommand: readOnlyCommand)
        }
        #expect(headline(.readOnly).hasPrefix("cannot write the database: it is read-only"))
        #expect(headline(ResultCode(rawValue: 1544)).hasPrefix("the database's folder is read-only"))
        #expect(headline(ResultCode(rawValue: 776)).contains("hot journal"))
        #expect(headline(.perm).contains("permission denied"))
        #expect(headline(.cannotOpen).hasPrefix("cannot open the database"))
        #expect(headline(.corrupt).hasPrefix("cannot read the database"))
        #expect(headline(.full).hasSuffix("the failed transaction was rolled back"))
        // A command that only reads never had a transaction to roll back.
        let reading = headline(.full, readOnlyCommand: true)
        #expect(reading.contains("-shm") && reading.hasSuffix("the database was not changed"), "\(reading)")
    }

    @Test func timestamps() {
        #expect(Timestamp.iso8601(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.iso8601(Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
    }

    @Test func demoScreenShowsTheLeaderboard() {
        var screen = DemoScreen(source: "in memory", seed: 7)
        let clock = ContinuousClock()
        screen.update(
            leaderboard: [
                LeaderboardRequest.Entry(id: 1, name: "Arthur", score: 130, team: "Red", color: "red"),
                LeaderboardRequest.Entry(id: 2, name: "Barbara", score: 80, team: "Blue", color: "blue"),
            ], now: clock.now)
        screen.teams = [
            TeamTotalsRequest.Entry(id: 1, name: "Red", color: "red", players: 1, total: 130),
            TeamTotalsRequest.Entry(id: 2, name: "Blue", color: "blue", players: 1, total: 80),
        ]
        #expect(screen.isReady)
        let wide = screen.lines(width: 100, usesColor: false, now: clock.now)
        #expect(wide[0].hasPrefix("DBWatch demo · live leaderboard"))
        #expect(wide[0].hasSuffix("in memory · seed 7 · 0 writes"))
        #expect(wide.contains { $0.contains("1  Arthur") && $0.contains("130") && $0.contains("Red") })
        for line in wide { #expect(CellText.width(of: line) <= 100, "\(line)") }
        let narrow = screen.lines(width: 50, usesColor: false, now: clock.now)
        #expect(narrow.count > wide.count)
        #expect(DemoScreen.bar(80, of: 160, width: 10) == "█████")
    }
}
