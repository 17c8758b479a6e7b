import DBWatchHummingbird
import Foundation

/// Keyed changes against whole values (issue 26), in one run: a
/// 10,000-row leaderboard ordered by score where one score changes.
///
///     dbwatch-bench-changes [--rows N] [--runs R]
///
/// For each way of keying rows (`Identifiable` elements encoded with
/// `JSONEncoder`, and `dbwatch serve`'s rows of JSON cells), it prints the
/// bytes and the median time of:
/// - the whole value's JSON (what a client receives today);
/// - the keyed changes: `KeyedChanges.between` and `encodedJSON()`, given
///   the previous and the fresh keyed rows;
/// - keying the fresh value (`KeyedRows(identifying:)` or
///   `KeyedRows(columns:rows:key:)`), which a server does once per commit
///   for all its clients;
/// and the ratios, whole value over changes.
@main
struct BenchChanges {
    static func main() throws {
        var rows = 10_000
        var runs = 101
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            switch argument {
            case "--rows": rows = Int(arguments.popFirst() ?? "") ?? rows
            case "--runs": runs = Int(arguments.popFirst() ?? "") ?? runs
            default:
                FileHandle.standardError.write(Data("usage: dbwatch-bench-changes [--rows N] [--runs R]\n".utf8))
                exit(2)
            }
        }
        let board = Leaderboard(rows: rows)
        print("Keyed changes against whole values: \(rows) rows ordered by score, one score changed, median of \(runs)")
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first
        print("load average \(load ?? "?"), \(ProcessInfo.processInfo.activeProcessorCount) processors")
        print("")
        try report(Self.identifiable(board, runs: runs))
        print("")
        try report(Self.columns(board, runs: runs))
    }

    /// The measures of one way of keying rows.
    struct Measures {
        var title: String
        var wholeBytes: Int
        var wholeTime: Duration
        var changesBytes: Int
        var changesTime: Duration
        var keyingTime: Duration
        var upserts: Int
        var deletes: Int
    }

    /// `[Player]` encoded with `JSONEncoder` (sorted keys), keyed by `id`.
    static func identifiable(_ board: Leaderboard, runs: Int) throws -> Measures {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let previous = try KeyedRows(identifying: board.before)
        let fresh = try KeyedRows(identifying: board.after)
        let whole = try encoder.encode(board.after)
        let changes = KeyedChanges.between(previous, fresh)
        guard try previous.applying(changes) == fresh else { fatalError("the changes do not give the fresh rows") }
        return Measures(
            title: "Identifiable elements (JSONEncoder, sorted keys)",
            wholeBytes: whole.count,
            wholeTime: try median(runs) { _ = try encoder.encode(board.after) },
            changesBytes: changes.encodedJSON().count,
            changesTime: try median(runs) { _ = KeyedChanges.between(previous, fresh).encodedJSON() },
            keyingTime: try median(runs) { _ = try KeyedRows(identifying: board.after) },
            upserts: changes.upserts.count, deletes: changes.deletes.count)
    }

    /// `dbwatch serve`'s rows: each cell's JSON already written, the whole
    /// value `{"columns":[…],"rows":[[…],…]}`.
    static func columns(_ board: Leaderboard, runs: Int) throws -> Measures {
        let columns = ["id", "name", "score"]
        let before = board.before.map(\.cells)
        let after = board.after.map(\.cells)
        let previous = try KeyedRows(columns: columns, rows: before, key: ["id"])
        let fresh = try KeyedRows(columns: columns, rows: after, key: ["id"])
        let changes = KeyedChanges.between(previous, fresh)
        guard try previous.applying(changes) == fresh else { fatalError("the changes do not give the fresh rows") }
        return Measures(
            title: "dbwatch serve's rows (JSON cells, {\"columns\",\"rows\"})",
            wholeBytes: wholeValue(columns: columns, rows: after).count,
            wholeTime: try median(runs) { _ = wholeValue(columns: columns, rows: after) },
            changesBytes: changes.encodedJSON().count,
            changesTime: try median(runs) { _ = KeyedChanges.between(previous, fresh).encodedJSON() },
            keyingTime: try median(runs) { _ = try KeyedRows(columns: columns, rows: after, key: ["id"]) },
            upserts: changes.upserts.count, deletes: changes.deletes.count)
    }

    /// The whole value as `serve` writes it, from the cells' JSON.
    static func wholeValue(columns: [String], rows: [[Data]]) -> Data {
        var json = Data(#"{"columns":["#.utf8)
        json.append(Data(columns.map { "\"\($0)\"" }.joined(separator: ",").utf8))
        json.append(Data(#"],"rows":["#.utf8))
        for (position, row) in rows.enumerated() {
            if position > 0 { json.append(UInt8(ascii: ",")) }
            json.append(UInt8(ascii: "["))
            for (column, cell) in row.enumerated() {
                if column > 0 { json.append(UInt8(ascii: ",")) }
                json.append(cell)
            }
            json.append(UInt8(ascii: "]"))
        }
        json.append(Data("]}".utf8))
        return json
    }

    /// The median duration of `runs` runs of `body`, after one warm-up run.
    static func median(_ runs: Int, _ body: () throws -> Void) throws -> Duration {
        let clock = ContinuousClock()
        try body()
        var durations: [Duration] = []
        for _ in 0..<max(runs, 1) { durations.append(try clock.measure(body)) }
        return durations.sorted()[durations.count / 2]
    }

    static func report(_ measures: Measures) {
        func microseconds(_ duration: Duration) -> String {
            let (seconds, attoseconds) = duration.components
            return String(format: "%.1f µs", Double(seconds) * 1e6 + Double(attoseconds) / 1e12)
        }
        func ratio(_ a: Double, _ b: Double) -> String { String(format: "%.1f×", a / b) }
        func double(_ duration: Duration) -> Double {
            let (seconds, attoseconds) = duration.components
            return Double(seconds) + Double(attoseconds) / 1e18
        }
        print(measures.title)
        print("  changes: \(measures.upserts) upsert(s), \(measures.deletes) delete(s)")
        print("  whole value JSON:          \(measures.wholeBytes) B, encode \(microseconds(measures.wholeTime))")
        print(
            "  keyed changes JSON:        \(measures.changesBytes) B, between + encode "
                + microseconds(measures.changesTime))
        print("  keying the fresh value:    \(microseconds(measures.keyingTime))")
        print("  bytes, whole / changes:    \(ratio(Double(measures.wholeBytes), Double(measures.changesBytes)))")
        print("  time, whole / (between + encode): \(ratio(double(measures.wholeTime), double(measures.changesTime)))")
        print(
            "  time, (keying + between + encode) / whole: "
                + ratio(double(measures.keyingTime + measures.changesTime), double(measures.wholeTime)))
    }
}
