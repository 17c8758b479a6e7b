/// How long the observations of a database took to fetch: every fetch
/// since the database opened, counted in the fixed buckets of a
/// ``DurationHistogram`` (see `DatabaseWriter.fetchDurations`).
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
public typealias FetchDurations = DurationHistogram
