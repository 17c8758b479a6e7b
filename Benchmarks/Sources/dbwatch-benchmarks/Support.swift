import CSQLiteRaw
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Time

/// Monotonic nanoseconds (`CLOCK_MONOTONIC`, the clock `DispatchTime` and
/// `ContinuousClock` use on Linux), cheap enough to take on every commit.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Seconds elapsed since `start` (from ``nowNanoseconds()``).
@inline(__always)
func seconds(since start: UInt64) -> Double {
    Double(nowNanoseconds() &- start) / 1e9
}

/// The `p`-th percentile (0...1) of sorted values, nearest rank.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    precondition(!sorted.isEmpty)
    let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

// MARK: - Memory

/// Resident set size in bytes, from `/proc/self/statm`.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Heap bytes in use (`mallinfo2`: every arena plus mmapped chunks).
func heapBytes() -> Int {
    Int(bench_heap_in_use())
}

/// Returns freed memory to the system so that RSS deltas mean something.
func trimHeap() {
    malloc_trim(0)
}

// MARK: - Files

/// A fresh directory for one workload's database files, removed by `remove()`.
struct ScratchDirectory {
    let path: String

    init(_ label: String) {
        let base = ProcessInfo.processInfo.environment["DBWATCH_BENCH_DIR"] ?? NSTemporaryDirectory()
        path = (base as NSString).appendingPathComponent(
            "dbwatch-bench-\(getpid())-\(label)-\(UInt32.random(in: 0...UInt32.max))")
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

// MARK: - Raw SQLite

struct RawError: Error, CustomStringConvertible {
    let description: String
}

/// The baseline: a connection driven with C calls only, opened like a
/// DBWatch pool's writer (WAL, `synchronous = NORMAL`, no shared cache, no mutex).
final class RawDatabase {
    let handle: OpaquePointer

    init(path: String) throws {
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else {
            sqlite3_close_v2(handle)
            throw RawError(description: "cannot open \(path): \(code)")
        }
        self.handle = handle
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA synchronous = NORMAL")
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Runs a script with `sqlite3_exec`.
    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        if code != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error \(code)"
            sqlite3_free(message)
            throw RawError(description: "\(text) (\(sql))")
        }
    }

    func prepare(_ sql: String) throws -> RawStatement {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw RawError(description: "\(String(cString: sqlite3_errmsg(handle))) (\(sql))")
        }
        return RawStatement(handle: statement)
    }
}

/// A prepared statement, finalized on deinit.
final class RawStatement {
    let handle: OpaquePointer

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Steps to the end (a statement that returns no row) and resets.
    @inline(__always)
    func run() {
        let code = sqlite3_step(handle)
        if code != SQLITE_DONE {
            fatalError("raw step failed: \(code) \(String(cString: sqlite3_errmsg(sqlite3_db_handle(handle))))")
        }
        sqlite3_reset(handle)
    }
}

// MARK: - Results

/// What a workload line compares against.
enum Target {
    /// No target: the line is context (a baseline, a raw figure).
    case none
    /// `value / reference >= minimum` (throughput ratios).
    case atLeastRatio(Double)
    /// `value < maximum`, in the line's unit (latencies, bytes).
    case below(Double)
}

/// One number from one run.
struct Sample {
    /// A stable key: `insert.dbwatch.idle-100`.
    let key: String
    /// What the line says, e.g. "DBWatch write, 100 idle observations of other tables".
    let label: String
    let value: Double
    let unit: String
    /// `value / reference` for ratio lines (both from the same run).
    let ratio: Double?
    /// What the ratio is taken against: "raw", "no-observation".
    let ratioAgainst: String?
    let target: Target
    /// Whether higher values are better (throughput) or lower (time, memory).
    let higherIsBetter: Bool

    init(
        _ key: String, _ label: String, value: Double, unit: String, ratio: Double? = nil, against: String? = nil,
        target: Target = .none, higherIsBetter: Bool = true
    ) {
        self.key = key
        self.label = label
        self.value = value
        self.unit = unit
        self.ratio = ratio
        self.ratioAgainst = against
        self.target = target
        self.higherIsBetter = higherIsBetter
    }
}

/// Median, minimum and maximum of the runs of one line.
struct Summary {
    let first: Sample
    let values: [Double]
    let ratios: [Double]

    var median: Double { Summary.median(values) }
    var medianRatio: Double? { ratios.isEmpty ? nil : Summary.median(ratios) }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let count = sorted.count
        return count % 2 == 1 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2
    }

    /// Whether the median meets the target; `nil` when there is none.
    var passes: Bool? {
        switch first.target {
        case .none: return nil
        case .atLeastRatio(let minimum): return medianRatio.map { $0 >= minimum }
        case .below(let maximum): return median < maximum
        }
    }
}

func format(_ value: Double, unit: String) -> String {
    switch unit {
    case "inserts/s", "bytes", "rows/s", "values":
        return grouped(Int(value.rounded()))
    case "%":
        return String(format: "%.1f", value)
    case "µs":
        return value < 10 ? String(format: "%.1f", value) : String(format: "%.0f", value)
    case "ms":
        return value < 10 ? String(format: "%.2f", value) : String(format: "%.1f", value)
    default:
        return String(format: "%.3g", value)
    }
}

func grouped(_ value: Int) -> String {
    let digits = String(abs(value))
    var result = ""
    for (index, character) in digits.reversed().enumerated() {
        if index > 0 && index % 3 == 0 { result.append(",") }
        result.append(character)
    }
    return (value < 0 ? "-" : "") + String(result.reversed())
}

func targetText(_ target: Target, unit: String) -> String {
    switch target {
    case .none: return ""
    case .atLeastRatio(let minimum): return "target ≥ \(Int((minimum * 100).rounded()))%"
    case .below(let maximum): return "target < \(format(maximum, unit: unit)) \(unit)"
    }
}

/// Prints one line per result: the median (and min–max over runs), the
/// ratio and the target with PASS or MISS.
func printSummaries(_ summaries: [Summary]) {
    for summary in summaries {
        let sample = summary.first
        var line = sample.label.padding(toLength: 66, withPad: " ", startingAt: 0)
        line += " " + format(summary.median, unit: sample.unit).leftPadded(10) + " " + sample.unit
        if summary.values.count > 1 {
            let low = format(summary.values.min()!, unit: sample.unit)
            let high = format(summary.values.max()!, unit: sample.unit)
            line += "  [\(low) – \(high)]"
        }
        if let ratio = summary.medianRatio, let against = sample.ratioAgainst {
            line += String(format: "  = %5.1f%% of %@", ratio * 100, against)
            if summary.ratios.count > 1 {
                line += String(
                    format: " [%.1f – %.1f%%]", summary.ratios.min()! * 100, summary.ratios.max()! * 100)
            }
        }
        let target = targetText(sample.target, unit: sample.unit)
        if !target.isEmpty, let passes = summary.passes {
            line += "  \(target): \(passes ? "PASS" : "MISS")"
        }
        print(line)
    }
    fflush(nil)
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

/// Writes progress to standard error, so that standard output holds only results.
func progress(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// A counter shared between tasks.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    @discardableResult
    func increment() -> Int { value.add(1, ordering: .relaxed).newValue }

    var current: Int { value.load(ordering: .relaxed) }
}

/// Suspends until `condition` holds, polling with short sleeps. Throws after `timeout`.
func waitUntil(
    _ what: String, timeout: Duration = .seconds(60), pollInterval: Duration = .microseconds(200),
    _ condition: @Sendable () -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now > deadline { throw RawError(description: "timed out waiting for \(what)") }
        try await Task.sleep(for: pollInterval)
    }
}

/// A value shared between tasks behind a lock.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func withLock<T>(_ body: (inout sending Value) -> sending T) -> sending T {
        mutex.withLock(body)
    }
}

/// Hands a value that is not `Sendable` to a closure that runs while the
/// sender waits for it (a raw connection used on a pool's thread).
struct UncheckedSendable<Value>: @unchecked Sendable {  // one thread at a time: the sender awaits the closure
    let value: Value
    init(_ value: Value) { self.value = value }
}
