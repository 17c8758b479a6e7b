import BenchProcess
import DBWatch
import Foundation
import Logging
import Synchronization

/// A logger that drops everything.
let quietLogger = Logger(label: "dbwatch.bench.replica", factory: { _ in SwiftLogNoOpLogHandler() })

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `v` of one row of `table`: the observed value of the latency workload.
struct RowValue: Queryable {
    let table: String
    let id: Int
    static let defaultValue = -1

    func fetch(_ db: Database) throws -> Int {
        try db.fetchOne(Int.self, sql: "SELECT v FROM \(table) WHERE id = ?", arguments: [id]) ?? -1
    }
}

/// Receives an observation's values (increasing) and lets the writer wait
/// for the value of a given commit; stamps are taken as values arrive.
final class LatencyProbe: Sendable {
    private struct State {
        var value = Int.min
        var stamp: UInt64 = 0
        var waiter: (expected: Int, continuation: CheckedContinuation<UInt64, any Error>)?
    }

    private let state = Mutex(State())

    func deliver(_ value: Int) {
        let stamp = nowNanoseconds()
        let resume = state.withLock { state -> CheckedContinuation<UInt64, any Error>? in
            state.value = value
            state.stamp = stamp
            guard let waiter = state.waiter, value >= waiter.expected else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        resume?.resume(returning: stamp)
    }

    /// When the value `expected` (or a later one) arrived; throws after
    /// `timeout`.
    func stamp(of expected: Int, timeout: Duration = .seconds(30)) async throws -> UInt64 {
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.continuation.resume(throwing: BenchError("value \(expected) not observed within \(timeout)"))
        }
        defer { watchdog.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> UInt64? in
                if state.value >= expected { return state.stamp }
                state.waiter = (expected, continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// SplitMix64: a fixed-seed generator, so every run writes the same rows.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let index = min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))
    return sorted[index]
}

func milliseconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1_000_000 }

/// Every figure of every run, printed at the end as median [min – max].
final class Results: @unchecked Sendable {  // used by the main task only
    private var order: [String] = []
    private var labels: [String: String] = [:]
    private var units: [String: String] = [:]
    private var values: [String: [Double]] = [:]

    func add(_ key: String, _ label: String, _ value: Double, _ unit: String) {
        if values[key] == nil {
            order.append(key)
            labels[key] = label
            units[key] = unit
        }
        values[key, default: []].append(value)
        print("  " + padded(label, 62) + String(format: " %12.2f ", value) + unit)
        fflush(nil)
    }

    func value(_ key: String) -> Double? { values[key]?.last }

    func printSummary(runs: Int) {
        print("\nSummary over \(runs) run(s): median [min – max]")
        for key in order {
            let sorted = values[key]!.sorted()
            let median = sorted[sorted.count / 2]
            print(
                padded(labels[key]!, 62) + String(format: " %10.2f [%.2f – %.2f] ", median, sorted.first!, sorted.last!)
                    + units[key]!)
        }
    }
}

/// The load average and this machine's cores, for the results.
func machineLoad() -> String {
    let load =
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3)
        .joined(separator: " ") ?? "?"
    return "load average \(load), \(ProcessInfo.processInfo.activeProcessorCount) cores"
}

func padded(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}
