import DBWatch
import Synchronization

/// One row of a table that the writes never touch: the idle observations.
/// Distinct `id`s make distinct requests (identical ones would share one
/// observation).
struct OtherRow: Queryable {
    let id: Int
    static let defaultValue: Int? = nil

    func fetch(_ db: Database) throws -> Int? {
        try db.fetchOne(Int.self, sql: "SELECT v FROM other WHERE id = ?", arguments: [id])
    }
}

/// `SELECT count(*)` of a written table. `salt` only makes requests distinct
/// (every salt runs the same cheap query, so that ten observations cost ten
/// times one); it is added to the count so each value still changes with
/// every insert.
struct TableCount: Queryable {
    let table: String
    let salt: Int
    static let defaultValue = 0

    func fetch(_ db: Database) throws -> Int {
        try (db.fetchOne(Int.self, sql: "SELECT count(*) FROM \(table)") ?? 0) + salt
    }
}

/// The row of `t` with primary key `id` (fan-out workload).
struct Item: Decodable, Hashable, Sendable {
    var id: Int64
    var v: Int64
}

struct ItemByID: Queryable {
    let id: Int
    static let defaultValue: Item? = nil

    func fetch(_ db: Database) throws -> Item? {
        try db.fetchOne(Item.self, sql: "SELECT * FROM t WHERE id = ?", arguments: [id])
    }
}

/// A count that is *not* `Equatable`, so that every refetch is delivered
/// (the fan-out's `UPDATE` does not change the count, and a deduplicated
/// count would deliver nothing to wait for).
struct CountValue: Sendable {
    let count: Int
}

struct FanOutCount: Queryable {
    static let defaultValue = CountValue(count: 0)

    func fetch(_ db: Database) throws -> CountValue {
        CountValue(count: try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? 0)
    }
}

/// The decoded struct of the decoding workload.
struct Player: Decodable, Sendable {
    var id: Int64
    var name: String
    var score: Int
    var bonus: Double
}

/// The same columns read by position through `init(row:)`: the
/// non-`Decodable` path of the decoding workload.
struct PlayerRecord: FetchableRecord, Sendable {
    var id: Int64
    var name: String
    var score: Int
    var bonus: Double

    init(row: RowView) throws {
        id = try row.decode(Int64.self, at: 0)
        name = try row.decode(String.self, at: 1)
        score = try row.decode(Int.self, at: 2)
        bonus = try row.decode(Double.self, at: 3)
    }
}

/// A one-shot event that one task awaits and another fires. A wait gives
/// up after a timeout, so that a consumer that ended early (its query
/// failed) stops the benchmark with an error instead of hanging it.
final class Signal: Sendable {
    private struct State {
        var fired = false
        var failure: RawError?
        var waiter: CheckedContinuation<Void, any Error>?
    }

    private let state = Mutex(State())

    func fire() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Waits until fired; throws after `timeout`.
    func wait(_ what: String, timeout: Duration = .seconds(120)) async throws {
        let timer = Task { [self] in
            try await Task.sleep(for: timeout)
            fail(RawError(description: "timed out after \(timeout) waiting for \(what)"))
        }
        defer { timer.cancel() }
        try await withCheckedThrowingContinuation { continuation in
            let outcome = state.withLock { state -> Result<Void, RawError>? in
                if state.fired { return .success(()) }
                if let failure = state.failure { return .failure(failure) }
                state.waiter = continuation
                return nil
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }

    private func fail(_ error: RawError) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.fired else { return nil }
            state.failure = error
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: error)
    }
}

/// Counts down from `count`; the task that brings it to zero fires `done`
/// and records when.
final class Countdown: Sendable {
    private let remaining: Atomic<Int>
    private let firedAt = Atomic<UInt64>(0)
    let done = Signal()

    init(_ count: Int) {
        remaining = Atomic(count)
        if count == 0 { done.fire() }
    }

    func arrive() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            firedAt.store(nowNanoseconds(), ordering: .releasing)
            done.fire()
        }
    }

    /// When the last arrival happened (``nowNanoseconds()``).
    var lastArrival: UInt64 { firedAt.load(ordering: .acquiring) }
}
