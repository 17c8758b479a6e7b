import Synchronization

/// Durations counted in fixed buckets, for a metrics backend to report as
/// a histogram: how long the observations of a database took to fetch
/// (``FetchDurations``), and in the delivery engine how long values took
/// from their commit to a client's socket. The integrations read it; the
/// core reports through no metrics library.
///
/// ```swift
/// let durations = pool.fetchDurations
/// durations.count                                        // durations so far
/// durations.buckets.first { $0.upperBound == .milliseconds(2) }?.count   // of 1-2 ms
/// ```
public struct DurationHistogram: Sendable, Hashable, CustomStringConvertible {
    /// The upper bounds of the buckets (inclusive), from 0.5 ms to 10 s; a
    /// last bucket without a bound takes longer durations.
    ///
    /// ```swift
    /// DurationHistogram.upperBounds.count   // 14, then the unbounded bucket
    /// ```
    public static let upperBounds: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// One bucket: the durations longer than the previous bucket's bound
    /// and at most its own (not cumulative, unlike Prometheus' `le`
    /// buckets).
    ///
    /// ```swift
    /// for bucket in pool.fetchDurations.buckets { print(bucket.upperBound ?? "+Inf", bucket.count) }
    /// ```
    public struct Bucket: Sendable, Hashable {
        /// Its bound, inclusive; `nil` for the last bucket (longer than 10 s).
        public var upperBound: Duration?
        /// The durations in this bucket.
        public var count: Int
        /// Their durations added up.
        public var total: Duration

        /// A bucket of `count` durations that add up to `total`.
        ///
        /// ```swift
        /// DurationHistogram.Bucket(upperBound: .milliseconds(1), count: 3, total: .microseconds(1_800))
        /// ```
        public init(upperBound: Duration?, count: Int, total: Duration) {
            self.upperBound = upperBound
            self.count = count
            self.total = total
        }
    }

    /// The buckets, one per bound of ``upperBounds`` and a last, unbounded one.
    ///
    /// ```swift
    /// pool.fetchDurations.buckets.last?.count   // fetches longer than 10 s
    /// ```
    public var buckets: [Bucket]

    /// Nothing counted yet: every bucket empty.
    ///
    /// ```swift
    /// DurationHistogram().count   // 0
    /// ```
    public init() {
        buckets = (Self.upperBounds.map(Optional.some) + [nil]).map { Bucket(upperBound: $0, count: 0, total: .zero) }
    }

    /// The durations counted.
    ///
    /// ```swift
    /// pool.fetchDurations.count   // 1 once an observation's first value is fetched
    /// ```
    public var count: Int { buckets.reduce(0) { $0 + $1.count } }

    /// Their durations added up.
    ///
    /// ```swift
    /// let durations = pool.fetchDurations
    /// let mean = durations.total / max(1, durations.count)
    /// ```
    public var total: Duration { buckets.reduce(.zero) { $0 + $1.total } }

    /// `count: 12, total: 0.0031 seconds`.
    ///
    /// ```swift
    /// DurationHistogram().description   // "count: 0, total: 0.0 seconds"
    /// ```
    public var description: String { "count: \(count), total: \(total)" }
}

/// The counters behind a ``DurationHistogram`` (one set per database's
/// fetch queue, one per `LiveQueries` for its deliveries): per bucket, a
/// count and a sum of nanoseconds. A duration adds to both with relaxed
/// atomics: no lock, no allocation.
package final class DurationHistogramCounters: Sendable {
    /// `DurationHistogram.upperBounds` in nanoseconds, compared without
    /// `Duration` arithmetic.
    private static let upperBoundNanoseconds: [Int64] = DurationHistogram.upperBounds.map(nanoseconds)

    private static let bucketCount = 15
    private let counts: InlineArray<15, Atomic<Int>> = InlineArray { _ in Atomic(0) }
    private let nanoseconds: InlineArray<15, Atomic<Int>> = InlineArray { _ in Atomic(0) }

    package init() {
        assert(Self.upperBoundNanoseconds.count + 1 == Self.bucketCount)
    }

    /// Counts one `duration` (a negative one as zero).
    package func record(_ duration: Duration) {
        let nanoseconds = Self.nanoseconds(duration)
        var index = 0
        while index < Self.upperBoundNanoseconds.count && nanoseconds > Self.upperBoundNanoseconds[index] {
            index += 1
        }
        counts[index].add(1, ordering: .relaxed)
        self.nanoseconds[index].add(Int(nanoseconds), ordering: .relaxed)
    }

    /// The counters now (each read on its own: a duration recorded
    /// meanwhile may be in a bucket's count and not yet in its total).
    package var snapshot: DurationHistogram {
        var durations = DurationHistogram()
        for index in 0..<Self.bucketCount {
            durations.buckets[index].count = counts[index].load(ordering: .relaxed)
            durations.buckets[index].total = .nanoseconds(self.nanoseconds[index].load(ordering: .relaxed))
        }
        return durations
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(0, seconds) &* 1_000_000_000 &+ max(0, attoseconds) / 1_000_000_000
    }
}
