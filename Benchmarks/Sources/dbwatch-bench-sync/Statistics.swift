import Foundation

/// Medians, ranges and percentiles of the runs, and how the report prints them.
extension Array where Element == Double {
    /// The value at quantile `q` (0…1) of the sorted values (nearest rank).
    func quantile(_ q: Double) -> Double {
        guard !isEmpty else { return .nan }
        let sorted = self.sorted()
        let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return sorted[Swift.min(Swift.max(rank, 0), sorted.count - 1)]
    }

    var median: Double { quantile(0.5) }

    /// `median [min – max]`, each formatted by `format`.
    func summary(_ format: (Double) -> String) -> String {
        guard let low = self.min(), let high = self.max() else { return "—" }
        return count == 1 ? format(median) : "\(format(median)) [\(format(low)) – \(format(high))]"
    }
}

/// Number formats of the report.
enum Format {
    static func decimal(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }
    static func milliseconds(_ nanoseconds: Double) -> String { String(format: "%.2f ms", nanoseconds / 1e6) }
    static func microseconds(_ nanoseconds: Double) -> String { String(format: "%.0f µs", nanoseconds / 1e3) }
    static func percent(_ ratio: Double) -> String { String(format: "%.1f %%", ratio * 100) }
    static func bytes(_ value: Double) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.maximumFractionDigits = 0
        return (formatter.string(from: NSNumber(value: value.rounded())) ?? "\(Int(value))") + " B"
    }
}

extension Duration {
    /// The duration in nanoseconds.
    var nanoseconds: Double {
        Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9
    }
}
