import ArgumentParser
import DBWatch
import Testing

@testable import dbwatch

// One test at a time: each parse is pure CPU, and under the thread
// sanitizer the first ones take seconds (every dynamic cast scans the
// conformances); run all at once, they held both cooperative threads for
// over a minute while the other suites' steps waited.
@Suite("Parsing the command line", .serialized)
struct ParsingTests {
    @Test func watchTakesTheDatabaseAndSeveralSQL() throws {
        let command = try DBWatchCommand.parseAsRoot([
            "watch", "db.sqlite", "SELECT 1", "SELECT 2", "--arg", "42", "--arg", "'42'", "--format", "ndjson",
            "--changes", "--count", "3", "--interval", "0.5", "--time-limit", "2", "--color", "never",
        ])
        let watch = try #require(command as? WatchCommand)
        #expect(watch.database == "db.sqlite")
        #expect(watch.sql == ["SELECT 1", "SELECT 2"])
        #expect(watch.arguments.map(\.value) == [.integer(42), .text("42")])
        #expect(watch.format == .ndjson)
        #expect(watch.changes)
        #expect(watch.count == 3)
        #expect(watch.interval == 0.5)
        #expect(watch.limits.timeLimit == 2)
        #expect(watch.color == .never)
        #expect(!watch.once)
    }

    @Test func watchDefaults() throws {
        let watch = try #require(try DBWatchCommand.parseAsRoot(["watch", "db.sqlite", "SELECT 1"]) as? WatchCommand)
        #expect(watch.format == nil)
        #expect(watch.interval == 1)
        #expect(watch.limits.timeLimit == 5)
        #expect(watch.count == nil)
        #expect(watch.arguments.isEmpty)
    }

    @Test(arguments: [
        ["watch", "db.sqlite"],
        ["watch", "db.sqlite", "  "],
        ["watch", "db.sqlite", "SELECT 1", "--count", "0"],
        ["watch", "db.sqlite", "SELECT 1", "--once", "--count", "2"],
        ["watch", "db.sqlite", "SELECT 1", "--interval", "0"],
        ["watch", "db.sqlite", "SELECT 1", "--interval", "-1"],
        ["watch", "db.sqlite", "SELECT 1", "--time-limit", "0"],
        ["watch", "db.sqlite", "SELECT 1", "SELECT 2", "--format", "csv"],
        ["watch", "db.sqlite", "SELECT 1", "--format", "xml"],
        ["watch", "db.sqlite", "SELECT 1", "--color", "sometimes"],
        ["migrate", "db.sqlite", "--to", "0"],
        ["migrate", "db.sqlite", "--dry-run", "--status"],
        ["migrate", "db.sqlite", "--status", "--to", "2"],
        ["migrate", ""],
        ["migrate", ":memory:"],
        ["migrate", ":memory:", "--status"],
        ["explain", "db.sqlite", ""],
        ["demo", "--rate", "0"],
        ["demo", "--duration", "-3"],
        ["demo", "--db", ":memory:"],
        ["frobnicate"],
    ])
    func badArgumentsAreRejected(arguments: [String]) {
        #expect(throws: (any Error).self, "\(arguments)") { try DBWatchCommand.parseAsRoot(arguments) }
        let exitCode = DBWatchCommand.exitCode(for: DBWatchCommand.parseError(arguments))
        #expect(exitCode.rawValue == 64, "\(arguments)")
    }

    /// Out-of-range numbers are refused with a message that gives the
    /// range: a tiny `--rate` used to trap in `.seconds(1 / rate)` and a
    /// tiny `--interval` to spin the CPU.
    @Test(arguments: [
        (["demo", "--rate", "1e-20"], "--rate must be between 0.01 and 1000"),
        (["demo", "--rate", "1e-300"], "--rate must be between 0.01 and 1000"),
        (["demo", "--rate", "0.001"], "--rate must be between 0.01 and 1000"),
        (["demo", "--rate", "nan"], "--rate must be between 0.01 and 1000"),
        (["demo", "--duration", "1e12"], "at most 31536000 seconds"),
        (["watch", "db.sqlite", "SELECT 1", "--interval", "1e-300"], "--interval must be between 0.01 and 3600"),
        (["watch", "db.sqlite", "SELECT 1", "--interval", "4000"], "--interval must be between 0.01 and 3600"),
        (["watch", "db.sqlite", "SELECT 1", "--time-limit", "100000"], "at most 86400 seconds"),
        (["explain", "db.sqlite", "SELECT 1", "--time-limit", "100000"], "at most 86400 seconds"),
    ])
    func outOfRangeNumbersNameTheRange(arguments: [String], message: String) {
        let error = DBWatchCommand.parseError(arguments)
        #expect(DBWatchCommand.exitCode(for: error).rawValue == 64, "\(arguments)")
        #expect(DBWatchCommand.message(for: error).contains(message), "\(DBWatchCommand.message(for: error))")
    }

    @Test func smallestRatesAndIntervalsAreAccepted() throws {
        let demo = try #require(try DBWatchCommand.parseAsRoot(["demo", "--rate", "0.01"]) as? DemoCommand)
        #expect(demo.rate == 0.01)
        let watch = try #require(
            try DBWatchCommand.parseAsRoot(["watch", "db.sqlite", "SELECT 1", "--interval", "0.01"]) as? WatchCommand)
        #expect(watch.interval == 0.01)
    }

    /// `--arg` takes the next word whatever it looks like: negative numbers
    /// (the README's own `-2e3`) and text that starts with dashes.
    @Test func argumentValuesMayStartWithADash() throws {
        for command in [
            ["watch", "db.sqlite", "SELECT ?, ?, ?", "--arg", "-5", "--arg", "-2e3", "--arg", "-- x", "--once"],
            ["explain", "db.sqlite", "SELECT ?, ?, ?", "--arg", "-5", "--arg", "-2e3", "--arg", "-- x"],
        ] {
            let parsed = try DBWatchCommand.parseAsRoot(command)
            let values = (parsed as? WatchCommand)?.arguments ?? (parsed as? ExplainCommand)?.arguments
            #expect(values?.map(\.value) == [.integer(-5), .real(-2000), .text("-- x")], "\(command)")
        }
    }

    @Test func sqlStartingWithACommentGetsAHint() throws {
        let hint = try #require(DBWatchCommand.optionLikeSQLHint(["watch", "db.sqlite", "-- top\nSELECT 1"]))
        #expect(hint.contains("put -- before the SQL"))
        #expect(DBWatchCommand.optionLikeSQLHint(["watch", "db.sqlite", "SELECT 1", "--count", "0"]) == nil)
        #expect(DBWatchCommand.optionLikeSQLHint(["watch", "db.sqlite", "SELECT ?", "--arg", "-- x", "-c"]) == nil)
        #expect(DBWatchCommand.optionLikeSQLHint(["watch", "db.sqlite", "--", "-- top\nSELECT 1", "--x"]) == nil)
        let afterTerminator = try DBWatchCommand.parseAsRoot(["watch", "db.sqlite", "--once", "--", "-- top\nSELECT 1"])
        #expect((afterTerminator as? WatchCommand)?.sql == ["-- top\nSELECT 1"])
    }

    @Test func migrateOptions() throws {
        let command = try DBWatchCommand.parseAsRoot(["migrate", "db.sqlite", "--dir", "M", "--to", "2", "--dry-run"])
        let migrate = try #require(command as? MigrateCommand)
        #expect(migrate.dir == "M")
        #expect(migrate.to == 2)
        #expect(migrate.dryRun)
        #expect(!migrate.status)
        let defaults = try #require(try DBWatchCommand.parseAsRoot(["migrate", "db.sqlite"]) as? MigrateCommand)
        #expect(defaults.dir == "Migrations")
    }

    @Test func explainAndDemoOptions() throws {
        let explain = try #require(
            try DBWatchCommand.parseAsRoot(["explain", "db.sqlite", "SELECT ?", "--arg", "x", "--no-plan"])
                as? ExplainCommand)
        #expect(explain.sql == "SELECT ?")
        #expect(explain.arguments.map(\.value) == [.text("x")])
        #expect(!explain.plan)
        let demo = try #require(
            try DBWatchCommand.parseAsRoot(["demo", "--db", "/tmp/d.sqlite", "--seed", "7", "--duration", "3"])
                as? DemoCommand)
        #expect(demo.db == "/tmp/d.sqlite")
        #expect(demo.seed == 7)
        #expect(demo.duration == 3)
        #expect(demo.rate == 4)
    }

    @Test(arguments: [
        ("42", DatabaseValue.integer(42)), ("-7", .integer(-7)), ("9223372036854775807", .integer(.max)),
        ("1.5", .real(1.5)), ("-2e3", .real(-2000)), (".5", .real(0.5)), ("'42'", .text("42")), ("''", .text("")),
        ("NULL", .null), ("null", .null), ("'NULL'", .text("NULL")), ("inf", .text("inf")), ("nan", .text("nan")),
        ("0x10", .text("0x10")), ("1e", .text("1e")), ("Arthur", .text("Arthur")), ("1.2.3", .text("1.2.3")),
        ("", .text("")), ("'", .text("'")), ("99999999999999999999.0", .real(1e20)),
        ("'99999999999999999999'", .text("99999999999999999999")), ("-9223372036854775808", .integer(.min)),
    ])
    func argumentValues(text: String, expected: DatabaseValue) throws {
        let argument = try #require(SQLArgument(argument: text))
        #expect(argument.value == expected, "\(text)")
    }

    /// Digits beyond the 64-bit range would bind as an inexact real
    /// (`1e+20`) without a word: they are a usage error that says so.
    @Test(arguments: ["99999999999999999999", "9223372036854775808", "-9223372036854775809", "+99999999999999999999"])
    func integersBeyondSixtyFourBitsAreRefused(text: String) throws {
        #expect(SQLArgument(argument: text) == nil)
        for command in ["watch", "explain"] {
            let error = DBWatchCommand.parseError([command, "db.sqlite", "SELECT ?", "--arg", text])
            #expect(DBWatchCommand.exitCode(for: error) == .validationFailure, "\(command) \(text)")
            let message = DBWatchCommand.message(for: error)
            #expect(message.contains("beyond the 64-bit range"), "\(message)")
            #expect(message.contains("\(text).0"), "\(message)")
        }
    }

    @Test func helpDocumentsTheExitCodes() {
        let help = DBWatchCommand.helpMessage(for: WatchCommand.self)
        for code in ["64", "65", "66", "67", "68"] { #expect(help.contains("  \(code)  "), "\(code)") }
        #expect(DBWatchCommand.helpMessage().contains("Exit codes:"))
    }
}

extension DBWatchCommand {
    /// The error parsing `arguments` throws.
    fileprivate static func parseError(_ arguments: [String]) -> any Error {
        do {
            _ = try parseAsRoot(arguments)
            return CommandFailure(.success, "parsed")
        } catch {
            return error
        }
    }
}
