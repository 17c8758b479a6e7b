import Synchronization

/// How long the observations of a database took to fetch: every fetch
/// since the database opened, counted in fixed buckets, for a metrics
/// backend to report as a histogram (the integrations read it; the core
/// reports through no metrics library).
///
/// Counted: each fetch of an observation (its first value and each refetch
/// after a commit), on the reader that ran it, from its first statement
/// to its last row, excluding the wait for a reader and the delivery to
/// subscribers. Not counted: one-off reads (`read`, `write`), and a fetch
/// cancelled before it started.
///
/// ```swift
/// let durations = pool.fetchDurations
/// durations.count                                        // fetches so far
/// durations.buckets.first { $0.upperBound == .milliseconds(2) }?.count   // fetches of 1-2 ms
/// ```
public struct FetchDurations: Sendable, Hashable, CustomStringConvertible {
    /// The upper bounds of the buckets (inclusive), from 0.5 ms to 10 s; a
    /// last bucket without a bound takes longer fetches.
    ///
    /// ```swift
    /// FetchDurations.upperBounds.count   // 14, then the unbounded bucket
    /// ```
    public static let upperBounds: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// One bucket: the fetches that took more than the previous bucket's
    /// bound and at most its own (not cumulative, unlike Prometheus' `le`
    /// buckets).
    ///
    /// ```swift
    /// for bucket in pool.fetchDurations.buckets { print(bucket.upperBound ?? "+Inf", bucket.count) }
    /// ```
    public struct Bucket: Sendable, Hashable {
        /// Its bound, inclusive; `nil` for the last bucket (longer than 10 s).
        public var upperBound: Duration?
        /// The fetches in this bucket.
        public var count: Int
        /// Their durations added up.
        public var total: Duration

        /// A bucket of `count` fetches that took `total` in all.
        ///
        /// ```swift
        /// FetchDurations.Bucket(upperBound: .milliseconds(1), count: 3, total: .microseconds(1_800))
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

    /// No fetch yet: every bucket empty.
    ///
    /// ```swift
    /// FetchDurations().count   // 0
    /// ```
    public init() {
        buckets = (Self.upperBounds.map(Optional.some) + [nil]).map { Bucket(upperBound: $0, count: 0, total: .zero) }
    }

    /// The fetches counted.
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

    /// `fetches: 12, total: 0.0031 seconds`.
    ///
    /// ```swift
    /// FetchDurations().description   // "fetches: 0, total: 0.0 seconds"
    /// ```
    public var description: String { "fetches: \(count), total: \(total)" }
}

/// The counters behind ``FetchDurations``, one set per database (on its
/// fetch queue): per bucket, a count and a sum of nanoseconds. A fetch
/// adds to both with relaxed atomics: no lock, no allocation.
final class FetchDurationCounters: Sendable {
    /// `FetchDurations.upperBounds` in nanoseconds, compared without
    /// `Duration` arithmetic.
    private static let upperBoundNanoseconds: [Int64] = FetchDurations.upperBounds.map(nanoseconds)

    private static let bucketCount = 15
    private let counts: InlineArray<15, Atomic<Int>> = InlineArray { _ in Atomic(0) }
    private let nanoseconds: InlineArray<15, Atomic<Int>> = InlineArray { _ in Atomic(0) }

    init() {
        assert(Self.upperBoundNanoseconds.count + 1 == Self.bucketCount)
    }

    /// Counts one fetch that took `duration`.
    func record(_ duration: Duration) {
        let nanoseconds = Self.nanoseconds(duration)
        var index = 0
        while index < Self.upperBoundNanoseconds.count && nanoseconds > Self.upperBoundNanoseconds[index] {
            index += 1
        }
        counts[index].add(1, ordering: .relaxed)
        self.nanoseconds[index].add(Int(nanoseconds), ordering: .relaxed)
    }

    /// The counters now (each read on its own: a fetch recorded meanwhile
    /// may be in a bucket's count and not yet in its total).
    var snapshot: FetchDurations {
        var durations = FetchDurations()
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
