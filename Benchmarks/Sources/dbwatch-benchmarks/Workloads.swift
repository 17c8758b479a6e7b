import CSQLiteRaw
import DBWatch
import Foundation
import Synchronization

/// Sizes of the workloads: the issue's, or smaller ones for a smoke run.
struct Sizes {
    /// Single-row insert transactions per measurement (issue: 20,000).
    var inserts = 20_000
    /// Blocks the inserts of each series are split into, interleaved with
    /// the other series' (a multiple of 2 and 4, the numbers of series that
    /// follow the raw one, so that every order of ``williamsOrders(_:)``
    /// runs equally often).
    var insertBlocks = 12
    /// Untimed inserts before each measurement (statement caches, file growth).
    var warmupInserts = 500
    /// Idle observation counts of workload 1.
    var idleCounts = [1, 100, 1_000, 10_000]
    /// Which run this is (from 0): workload 1 rotates the order of its
    /// idle-observation steps by it.
    var run = 0
    /// Commits measured for latency.
    var latencyCommits = 2_000
    /// Observations of single rows in the fan-out.
    var fanOutRows = 1_000
    /// `UPDATE`s per fan-out run (the median counts).
    var fanOutRounds = 3
    /// Observations registered to measure memory.
    var memoryObservations = 10_000
    /// Rows decoded.
    var decodedRows = 100_000
    /// Alternating raw/DBWatch decoding passes per run (the best of each
    /// counts; one pass takes about 50 ms, and single passes vary by ±30 %).
    var decodePasses = 5

    static let full = Sizes()
    static let quick = Sizes(
        inserts: 2_400, insertBlocks: 12, warmupInserts: 100, idleCounts: [1, 100, 1_000, 10_000], latencyCommits: 300,
        fanOutRows: 1_000, fanOutRounds: 1, memoryObservations: 10_000, decodedRows: 100_000, decodePasses: 1)
}

// MARK: - Shared helpers

/// The raw baseline: transactions of `BEGIN IMMEDIATE; INSERT; COMMIT` with
/// three prepared statements, C calls only.
final class RawInserter {
    let db: RawDatabase
    private let begin: RawStatement
    private let insert: RawStatement
    private let commit: RawStatement

    init(path: String) throws {
        db = try RawDatabase(path: path)
        try db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        begin = try db.prepare("BEGIN IMMEDIATE TRANSACTION")
        insert = try db.prepare("INSERT INTO t (v) VALUES (?)")
        commit = try db.prepare("COMMIT TRANSACTION")
    }

    /// One transaction per value.
    func run(_ values: Range<Int>) {
        for value in values {
            begin.run()
            sqlite3_bind_int64(insert.handle, 1, Int64(value))
            insert.run()
            commit.run()
        }
    }
}

/// DBWatch: one `pool.write` per insert, the same single-row insert through
/// the cached statement.
func dbwatchInsert(_ pool: DatabasePool, table: String, _ values: Range<Int>) async throws {
    let sql = "INSERT INTO \(table) (v) VALUES (?)"
    for value in values {
        try await pool.write { db in try db.cachedStatement(sql: sql).execute(arguments: [value]) }
    }
}

/// A way of inserting rows, timed in blocks.
struct InsertSeries {
    let run: (Range<Int>) async throws -> Void

    static func raw(_ inserter: RawInserter) -> InsertSeries {
        InsertSeries { values in inserter.run(values) }
    }

    static func dbwatch(_ pool: DatabasePool, table: String = "t") -> InsertSeries {
        InsertSeries { values in try await dbwatchInsert(pool, table: table, values) }
    }

    /// The same inserts, and then `settle` (still timed): for observed
    /// writes, until every observation holds the value of the block's last
    /// commit, so that a series pays for its own refetches, not for those
    /// the previous series left behind.
    func settled(by settle: @escaping @Sendable () async throws -> Void) -> InsertSeries {
        InsertSeries { values in
            try await run(values)
            try await settle()
        }
    }

    /// The same `pool.write` loop, in a task that prefers the writer's
    /// executor: each write runs inline on the writer's thread.
    static func onWriter(_ pool: DatabasePool, table: String = "t") -> InsertSeries {
        InsertSeries { values in
            try await withTaskExecutorPreference(pool.writerExecutor) {
                try await dbwatchInsert(pool, table: table, values)
            }
        }
    }
}

/// Runs `total` inserts of every series, interleaved in blocks so that a
/// change of machine load during the measurement hits every series alike.
/// The first series (raw) opens each block; the others follow in the orders
/// of a Williams square, so that each runs right after raw, and right after
/// each other series, equally often (what ran just before changes the cost
/// of the next thread hops by 10 % or more on this VM). Returns each
/// series' inserts per second.
func interleavedRates(_ series: [InsertSeries], sizes: Sizes, offset: inout Int) async throws -> [Double] {
    let blockSize = sizes.inserts / sizes.insertBlocks
    for each in series { try await each.run(offset..<(offset + sizes.warmupInserts)) }
    offset += sizes.warmupInserts
    var elapsed = [UInt64](repeating: 0, count: series.count)
    let orders = williamsOrders(series.count - 1)
    for block in 0..<sizes.insertBlocks {
        for index in [0] + orders[block % orders.count].map({ $0 + 1 }) {
            let start = nowNanoseconds()
            try await series[index].run(offset..<(offset + blockSize))
            elapsed[index] += nowNanoseconds() - start
        }
        offset += blockSize
    }
    return elapsed.map { Double(blockSize * sizes.insertBlocks) / (Double($0) / 1e9) }
}

/// Orders of `0..<count` in which every element comes first equally often
/// and directly follows every other element equally often (a Williams
/// square; for an odd count, its rows and their reverses).
func williamsOrders(_ count: Int) -> [[Int]] {
    guard count > 1 else { return [Array(0..<count)] }
    var first = [0]
    var low = 1
    var high = count - 1
    while first.count < count {
        first.append(low)
        low += 1
        if first.count < count {
            first.append(high)
            high -= 1
        }
    }
    let rows = (0..<count).map { shift in first.map { ($0 + shift) % count } }
    return count.isMultiple(of: 2) ? rows : rows + rows.map { $0.reversed() }
}

/// Creates `other (id, v)` with `rows` rows: the table idle observations read.
func createOtherTable(_ pool: DatabasePool, rows: Int) async throws {
    try await pool.write { db in
        try db.execute(sql: "CREATE TABLE other (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        let insert = try db.cachedStatement(sql: "INSERT INTO other (id, v) VALUES (?, ?)")
        for id in 1...rows { try insert.execute(arguments: [id, id]) }
    }
}

/// Starts `count` more idle observations of `other` and waits for each
/// one's first value. The caller keeps the iterators.
func addIdleObservations(
    _ pool: DatabasePool, to iterators: inout [QueryObservation<OtherRow>.Iterator], count: Int
) async throws {
    guard count > 0 else { return }
    let first = iterators.count
    // Registering starts every first fetch; then collect the first values.
    for id in (first + 1)...(first + count) {
        iterators.append(pool.observe(OtherRow(id: id)).makeAsyncIterator())
    }
    for index in first..<iterators.count {
        guard try await iterators[index].next() != nil else { throw RawError(description: "idle observation ended") }
    }
}

/// Stops consumer tasks and waits for them.
func stop(_ tasks: [Task<Void, any Error>]) async {
    for task in tasks { task.cancel() }
    for task in tasks { _ = await task.result }
}

// MARK: - 1. Write overhead

/// Workload 1, for each number of idle observations (0, 1, 100, 1,000,
/// 10,000), on fresh files: raw inserts; a DBWatch pool that has no
/// observation; and a twin pool with that many idle observations of another
/// table. Each pool is written to from an ordinary task and from a task on
/// its writer's executor (no thread hops: the cost of the writes alone, with
/// far less noise). The five series insert in interleaved blocks, and both
/// pools grow at the same pace. Fresh files per step keep every step alike
/// (on the same files, later steps measured a few points lower whatever the
/// number of observations).
func writeOverhead(_ sizes: Sizes) async throws -> [Sample] {
    let scratch = ScratchDirectory("write")
    defer { scratch.remove() }
    var samples: [Sample] = []

    // The cost of the hop alone: an empty job on the writer thread and back.
    let hops = try DatabasePool(path: scratch.file("hops.sqlite"))
    let trips = sizes.inserts / 10
    for _ in 0..<100 { try await hops.writeWithoutTransaction { _ in } }
    var tripStart = nowNanoseconds()
    for _ in 0..<trips { try await hops.writeWithoutTransaction { _ in } }
    let emptyTrip = Double(nowNanoseconds() - tripStart) / Double(trips) / 1000
    tripStart = nowNanoseconds()
    for _ in 0..<trips { try await hops.write { _ in } }
    let emptyWrite = Double(nowNanoseconds() - tripStart) / Double(trips) / 1000
    await hops.close()

    // The last step measured 3–8 points lower than the others whatever its
    // count (reversed, 1 observation dipped to 91 % and 10,000 passed): each
    // run starts the steps at a different count.
    let shift = sizes.run % sizes.idleCounts.count
    let idleOrder = Array(sizes.idleCounts[shift...] + sizes.idleCounts[..<shift])
    for count in [0] + idleOrder {
        let raw = try RawInserter(path: scratch.file("raw-\(count).sqlite"))
        let plain = try DatabasePool(path: scratch.file("plain-\(count).sqlite"))
        defer { plain.syncClose() }
        let observed = try DatabasePool(path: scratch.file("observed-\(count).sqlite"))
        defer { observed.syncClose() }
        for pool in [plain, observed] {
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
            }
            // The same content in both pools; every table exists before the
            // first observation (a schema change makes every observation refetch).
            try await createOtherTable(pool, rows: sizes.idleCounts.max()!)
        }
        let series: [InsertSeries] = [
            .raw(raw), .dbwatch(plain), .dbwatch(observed), .onWriter(plain), .onWriter(observed),
        ]
        var iterators: [QueryObservation<OtherRow>.Iterator] = []
        try await addIdleObservations(observed, to: &iterators, count: count)
        guard observed.observationCount == count else {
            throw RawError(description: "expected \(count) observations, found \(observed.observationCount)")
        }
        var offset = 0
        let rates = try await interleavedRates(series, sizes: sizes, offset: &offset)
        if count == 0 {
            samples += [
                Sample("insert.raw", "1. raw SQLite: insert transactions", value: rates[0], unit: "inserts/s"),
                Sample(
                    "insert.dbwatch.idle-0", "1. DBWatch write, no observation", value: rates[1], unit: "inserts/s",
                    ratio: rates[1] / rates[0], against: "raw", target: .atLeastRatio(0.80)),
                Sample(
                    "insert.dbwatch.writer-executor-0", "1. DBWatch write, no observation, task on writerExecutor",
                    value: rates[3], unit: "inserts/s", ratio: rates[3] / rates[0], against: "raw",
                    target: .atLeastRatio(0.80)),
                Sample(
                    "insert.dbwatch.twin-0", "   second pool, no observation (noise check)", value: rates[2],
                    unit: "inserts/s", ratio: rates[2] / rates[1], against: "no-obs"),
                Sample(
                    "insert.dbwatch.writer-executor-twin-0", "   same, task on writerExecutor (noise check)",
                    value: rates[4], unit: "inserts/s", ratio: rates[4] / rates[3], against: "no-obs"),
                Sample(
                    "insert.raw.µs", "   raw: time per insert transaction", value: 1e6 / rates[0], unit: "µs",
                    higherIsBetter: false),
                Sample(
                    "insert.dbwatch.µs", "   DBWatch: time per write", value: 1e6 / rates[1], unit: "µs",
                    higherIsBetter: false),
                Sample(
                    "insert.dbwatch.writer-executor.µs", "   DBWatch: time per write, task on writerExecutor",
                    value: 1e6 / rates[3], unit: "µs", higherIsBetter: false),
                Sample(
                    "insert.dbwatch.hop", "   DBWatch: empty writeWithoutTransaction round trip", value: emptyTrip,
                    unit: "µs", higherIsBetter: false),
                Sample(
                    "insert.dbwatch.empty-write", "   DBWatch: empty write (BEGIN IMMEDIATE; COMMIT)",
                    value: emptyWrite,
                    unit: "µs", higherIsBetter: false),
            ]
        } else {
            samples += [
                Sample(
                    "insert.dbwatch.idle-\(count)", "1. DBWatch write, \(grouped(count)) idle obs. of another table",
                    value: rates[2], unit: "inserts/s", ratio: rates[2] / rates[1], against: "no-obs",
                    target: .atLeastRatio(0.95)),
                Sample(
                    "insert.dbwatch.writer-executor.idle-\(count)", "   same, task on writerExecutor",
                    value: rates[4], unit: "inserts/s", ratio: rates[4] / rates[3], against: "no-obs",
                    target: .atLeastRatio(0.95)),
                Sample(
                    "insert.dbwatch.idle-\(count).raw", "   same (ordinary task), as a ratio of raw", value: rates[2],
                    unit: "inserts/s", ratio: rates[2] / rates[0], against: "raw"),
            ]
        }
        // The idle observations must have cost nothing: one fetch each, the first.
        if let statistics = observed.statistics(for: OtherRow(id: 1)), statistics.fetches != 1 {
            progress("warning: an idle observation fetched \(statistics.fetches) times: \(statistics)")
        }
        iterators.removeAll()
    }
    return samples
}

// MARK: - 2. Observations of the written table

/// Workload 2: one and ten observations of the written table, each consumed
/// by a task that reads every value, while inserts run (interleaved in
/// blocks with the raw inserts).
func observedWrites(_ sizes: Sizes) async throws -> [Sample] {
    let scratch = ScratchDirectory("observed")
    defer { scratch.remove() }
    var samples: [Sample] = []

    for (observers, target) in [(1, 0.50), (10, 0.30)] {
        let raw = try RawInserter(path: scratch.file("raw-\(observers).sqlite"))
        let pool = try DatabasePool(path: scratch.file("dbwatch-\(observers).sqlite"))
        defer { pool.syncClose() }
        try await pool.write { db in try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        }

        let received = Counter()
        let ready = Countdown(observers)
        // The last value each consumer received, minus its salt: the row count it saw.
        let seen = Locked([Int](repeating: -1, count: observers))
        let tasks = (0..<observers).map { salt in
            Task {
                var isFirst = true
                for try await value in pool.observe(TableCount(table: "t", salt: salt)) {
                    received.increment()
                    seen.withLock { $0[salt] = value - salt }
                    if isFirst {
                        isFirst = false
                        ready.arrive()
                    }
                }
            }
        }
        try await ready.done.wait("every observation's first value")
        let before = pool.statistics(for: TableCount(table: "t", salt: 0))?.fetches ?? 0
        var offset = 0
        let caughtUp: @Sendable () async throws -> Void = {
            let rows = try await pool.read { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") } ?? 0
            try await waitUntil("every observation to see \(rows) rows", pollInterval: .microseconds(50)) {
                seen.withLock { $0.allSatisfy { $0 == rows } }
            }
        }
        let rates = try await interleavedRates(
            [.raw(raw), .dbwatch(pool).settled(by: caughtUp), .onWriter(pool).settled(by: caughtUp)], sizes: sizes,
            offset: &offset)
        let fetches = (pool.statistics(for: TableCount(table: "t", salt: 0))?.fetches ?? 0) - before
        await stop(tasks)
        let commits = sizes.inserts + sizes.warmupInserts
        let plural = observers == 1 ? "observation" : "observations"
        samples += [
            Sample(
                "observed.raw.\(observers)", "2. raw SQLite: insert transactions", value: rates[0], unit: "inserts/s"),
            Sample(
                "observed.dbwatch.\(observers)", "2. DBWatch write, \(observers) \(plural) of the written table",
                value: rates[1], unit: "inserts/s", ratio: rates[1] / rates[0], against: "raw",
                target: .atLeastRatio(target)),
            Sample(
                "observed.dbwatch.\(observers).writer-executor",
                "2. … the same, writing task on writerExecutor", value: rates[2], unit: "inserts/s",
                ratio: rates[2] / rates[0], against: "raw", target: .atLeastRatio(target)),
            Sample(
                "observed.dbwatch.\(observers).fetches",
                "   fetches per observation for \(grouped(commits)) commits (coalesced)", value: Double(fetches),
                unit: "values"),
            Sample(
                "observed.dbwatch.\(observers).values", "   values received, all consumers",
                value: Double(received.current), unit: "values"),
        ]
    }
    return samples
}

// MARK: - 3. Latency

/// Receives the values of one observation and lets the writer wait for the
/// value of a given commit. Timestamps are taken by the consumer task.
final class LatencyProbe: Sendable {
    private struct State {
        var value = -1
        var stamp: UInt64 = 0
        var waiter: (expected: Int, continuation: CheckedContinuation<UInt64, Never>)?
    }

    private let state = Mutex(State())

    func deliver(_ value: Int) {
        let stamp = nowNanoseconds()
        let resume = state.withLock { state -> (CheckedContinuation<UInt64, Never>)? in
            state.value = value
            state.stamp = stamp
            guard let waiter = state.waiter, value >= waiter.expected else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        resume?.resume(returning: stamp)
    }

    /// When the value `expected` (or a later one) was received.
    func stamp(of expected: Int) async -> UInt64 {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> UInt64? in
                if state.value >= expected { return state.stamp }
                state.waiter = (expected, continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Workload 3: for each commit, the time from `write` returning (and from
/// the end of the write closure) until the observing task holds the value.
func latency(_ sizes: Sizes) async throws -> [Sample] {
    let scratch = ScratchDirectory("latency")
    defer { scratch.remove() }
    var samples: [Sample] = []

    // Raw floor: commit on one connection, then run the observed query on a
    // second connection (what a hand-written refresh costs, with no thread hop).
    do {
        let writer = try RawDatabase(path: scratch.file("raw.sqlite"))
        try writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        let reader = try RawDatabase(path: scratch.file("raw.sqlite"))
        let begin = try writer.prepare("BEGIN IMMEDIATE TRANSACTION")
        let insert = try writer.prepare("INSERT INTO t (v) VALUES (?)")
        let commit = try writer.prepare("COMMIT TRANSACTION")
        let count = try reader.prepare("SELECT count(*) FROM t")
        var latencies: [Double] = []
        for value in 0..<(sizes.latencyCommits + 100) {
            begin.run()
            sqlite3_bind_int64(insert.handle, 1, Int64(value))
            insert.run()
            commit.run()
            let start = nowNanoseconds()
            guard sqlite3_step(count.handle) == SQLITE_ROW, sqlite3_column_int64(count.handle, 0) == value + 1 else {
                throw RawError(description: "raw count mismatch")
            }
            sqlite3_reset(count.handle)
            if value >= 100 { latencies.append(Double(nowNanoseconds() - start) / 1000) }
        }
        latencies.sort()
        samples.append(
            Sample(
                "latency.raw.p50", "3. raw SQLite: commit returned → query re-run, p50",
                value: percentile(latencies, 0.5), unit: "µs", higherIsBetter: false))
    }

    let pool = try DatabasePool(path: scratch.file("dbwatch.sqlite"))
    defer { pool.syncClose() }
    try await pool.write { db in try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)") }
    let probe = LatencyProbe()
    let consumer = Task {
        for try await count in pool.observe(TableCount(table: "t", salt: 0)) { probe.deliver(count) }
    }
    _ = await probe.stamp(of: 0)

    var fromReturn: [Double] = []
    var fromClosureEnd: [Double] = []
    var early = 0
    let warmup = 100
    for index in 0..<(sizes.latencyCommits + warmup) {
        let closureEnd = try await pool.write { db in
            try db.cachedStatement(sql: "INSERT INTO t (v) VALUES (?)").execute(arguments: [index])
            return nowNanoseconds()
        }
        let returned = nowNanoseconds()
        let received = await probe.stamp(of: index + 1)
        guard index >= warmup else { continue }
        if received < returned { early += 1 }
        fromReturn.append(Double(Int64(bitPattern: received &- returned)) / 1000)
        fromClosureEnd.append(Double(Int64(bitPattern: received &- closureEnd)) / 1000)
    }
    await stop([consumer])
    fromReturn.sort()
    fromClosureEnd.sort()
    samples += [
        Sample(
            "latency.dbwatch.return.p50", "3. DBWatch: write returned → value received, p50",
            value: percentile(fromReturn, 0.5), unit: "µs", target: .below(100), higherIsBetter: false),
        Sample(
            "latency.dbwatch.return.p99", "3. DBWatch: write returned → value received, p99",
            value: percentile(fromReturn, 0.99), unit: "µs", target: .below(500), higherIsBetter: false),
        Sample(
            "latency.dbwatch.closure.p50", "   write closure ended → value received, p50",
            value: percentile(fromClosureEnd, 0.5), unit: "µs", higherIsBetter: false),
        Sample(
            "latency.dbwatch.closure.p99", "   write closure ended → value received, p99",
            value: percentile(fromClosureEnd, 0.99), unit: "µs", higherIsBetter: false),
        Sample(
            "latency.dbwatch.early", "   values received before write returned (%)",
            value: 100 * Double(early) / Double(fromReturn.count), unit: "%"),
    ]
    return samples
}

// MARK: - 4. Fan-out

/// Workload 4: 1,000 observations of single rows plus one `count(*)`, one
/// `UPDATE` of every row, until every observation has its new value. A run
/// does `fanOutRounds` updates and keeps the median round.
func fanOut(_ sizes: Sizes) async throws -> [Sample] {
    let scratch = ScratchDirectory("fanout")
    defer { scratch.remove() }
    let rows = sizes.fanOutRows
    let rounds = sizes.fanOutRounds
    let fill =
        "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < \(rows)) INSERT INTO t (id, v) SELECT x, x FROM s"

    // Raw: the same UPDATE transaction, then the same 1,001 queries in a row.
    var rawTotals: [Double] = []
    var rawUpdates: [Double] = []
    do {
        let db = try RawDatabase(path: scratch.file("raw.sqlite"))
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL); \(fill)")
        let byID = try db.prepare("SELECT * FROM t WHERE id = ?")
        let count = try db.prepare("SELECT count(*) FROM t")
        let begin = try db.prepare("BEGIN IMMEDIATE TRANSACTION")
        let update = try db.prepare("UPDATE t SET v = v + 1")
        let commit = try db.prepare("COMMIT TRANSACTION")
        var checksum: Int64 = 0
        for _ in 0..<rounds {
            let start = nowNanoseconds()
            begin.run()
            update.run()
            commit.run()
            let updated = nowNanoseconds()
            for id in 1...rows {
                sqlite3_bind_int64(byID.handle, 1, Int64(id))
                guard sqlite3_step(byID.handle) == SQLITE_ROW else { throw RawError(description: "raw row missing") }
                checksum &+= sqlite3_column_int64(byID.handle, 0) &+ sqlite3_column_int64(byID.handle, 1)
                sqlite3_reset(byID.handle)
            }
            guard sqlite3_step(count.handle) == SQLITE_ROW else { throw RawError(description: "raw count failed") }
            checksum &+= sqlite3_column_int64(count.handle, 0)
            sqlite3_reset(count.handle)
            let end = nowNanoseconds()
            rawTotals.append(Double(end - start) / 1e6)
            rawUpdates.append(Double(updated - start) / 1e6)
        }
        if checksum == 0 { progress("") }
    }

    let pool = try DatabasePool(path: scratch.file("dbwatch.sqlite"))
    defer { pool.syncClose() }
    try await pool.write { db in
        try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        try db.execute(sql: fill)
        try db.execute(sql: "CREATE TABLE other (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        try db.execute(sql: "INSERT INTO other (id, v) VALUES (1, 1)")
    }
    // The UPDATE alone through `write`: without observation (no hooks), then
    // with one observation of another table (hooks installed, nothing to refetch).
    func timedUpdates() async throws -> Double {
        var times: [Double] = []
        for _ in 0..<3 {
            let start = nowNanoseconds()
            try await pool.write { db in try db.execute(sql: "UPDATE t SET v = v + 1") }
            times.append(Double(nowNanoseconds() - start) / 1e6)
        }
        return Summary.median(times)
    }
    let updateUnhooked = try await timedUpdates()
    var idle = pool.observe(OtherRow(id: 1)).makeAsyncIterator()
    _ = try await idle.next()
    let updateHooked = try await timedUpdates()
    withExtendedLifetime(idle) {}
    let base = 6  // the six UPDATEs above
    let ready = Countdown(rows + 1)
    // The UPDATE changes no row's existence: the count(*) observation is out
    // of its region (DBWatch tracks "rows" apart from columns) and must not
    // refetch. Only the row observations get a new value.
    let updated = (0..<rounds).map { _ in Countdown(rows) }
    let countRefetched = Counter()
    // Rows still waiting for the value of the current round, and what went wrong.
    let pending = Locked((ids: Set(1...rows), problems: [String]()))
    var tasks: [Task<Void, Never>] = []
    for id in 1...rows {
        tasks.append(
            Task {
                do {
                    var values = pool.observe(ItemByID(id: id)).makeAsyncIterator()
                    _ = try await values.next()
                    ready.arrive()
                    for round in 0..<rounds {
                        let item = try await values.next()
                        if item??.v != Int64(id + base + round + 1) {
                            pending.withLock {
                                $0.problems.append("row \(id), round \(round): \(String(describing: item))")
                            }
                        }
                        pending.withLock { _ = $0.ids.remove(id) }
                        updated[round].arrive()
                    }
                } catch {
                    pending.withLock { $0.problems.append("row \(id): \(error)") }
                }
            })
    }
    let countTask = Task {
        var values = pool.observe(FanOutCount()).makeAsyncIterator()
        _ = try await values.next()
        ready.arrive()
        while try await values.next() != nil { countRefetched.increment() }
    }
    try await ready.done.wait("every observation's first value")

    var totals: [Double] = []
    var writes: [Double] = []
    for round in 0..<rounds {
        // Let every consumer park in its next `next()`.
        try await Task.sleep(for: .milliseconds(100))
        pending.withLock { $0.ids = Set(1...rows) }
        let start = nowNanoseconds()
        try await pool.write { db in try db.execute(sql: "UPDATE t SET v = v + 1") }
        let writeReturned = nowNanoseconds()
        // A watchdog: report the observations that never got their new value.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(10))
            let (ids, problems) = pending.withLock { ($0.ids.sorted(), $0.problems) }
            var report = "fan-out: \(ids.count) observations without their new value after 10 s: \(ids.prefix(10))"
            for id in ids.prefix(3) {
                let statistics = pool.statistics(for: ItemByID(id: id))
                report += "\n  row \(id): \(statistics.map { "\($0)" } ?? "no running observation")"
            }
            report += "\n  observationCount: \(pool.observationCount); problems: \(problems.prefix(5))"
            progress(report)
            exit(2)
        }
        try await updated[round].done.wait("every observation's new value")
        watchdog.cancel()
        totals.append(Double(updated[round].lastArrival - start) / 1e6)
        writes.append(Double(writeReturned - start) / 1e6)
    }
    for task in tasks { await task.value }
    let countStatistics = pool.statistics(for: FanOutCount())
    await stop([countTask])
    if countRefetched.current > 0 || countStatistics?.changesSkipped != rounds {
        pending.withLock { $0.problems.append("count(*) was refetched: \(String(describing: countStatistics))") }
    }
    let problems = pending.withLock { $0.problems }
    if !problems.isEmpty { throw RawError(description: "fan-out: \(problems.prefix(5))") }

    let raw = Summary.median(rawTotals)
    let total = Summary.median(totals)
    return [
        Sample(
            "fanout.raw", "4. raw SQLite: UPDATE + the same \(grouped(rows + 1)) queries", value: raw, unit: "ms",
            higherIsBetter: false),
        Sample(
            "fanout.raw.update", "   of which the UPDATE transaction", value: Summary.median(rawUpdates), unit: "ms",
            higherIsBetter: false),
        Sample(
            "fanout.dbwatch", "4. DBWatch: UPDATE → \(grouped(rows)) rows refreshed (+ count(*) skipped)", value: total,
            unit: "ms", ratio: raw / total, against: "raw", target: .below(25), higherIsBetter: false),
        Sample(
            "fanout.dbwatch.write", "   of which until the write returned (readers already fetching)",
            value: Summary.median(writes), unit: "ms", higherIsBetter: false),
        Sample(
            "fanout.dbwatch.update-unhooked", "   DBWatch UPDATE write alone, no observation", value: updateUnhooked,
            unit: "ms", higherIsBetter: false),
        Sample(
            "fanout.dbwatch.update-hooked", "   same, hooks on (1 observation of another table)", value: updateHooked,
            unit: "ms", higherIsBetter: false),
    ]
}

// MARK: - 5. Memory

/// Workload 5: heap and RSS growth per idle observation, with one task
/// holding every iterator, and with one suspended consumer task each.
func memory(_ sizes: Sizes) async throws -> [Sample] {
    let scratch = ScratchDirectory("memory")
    defer { scratch.remove() }
    let count = sizes.memoryObservations
    let pool = try DatabasePool(path: scratch.file("dbwatch.sqlite"))
    defer { pool.syncClose() }
    try await createOtherTable(pool, rows: count)
    // Warm the readers (statement caches, page cache) with a few observations
    // of the same query, then drop them.
    do {
        var warm: [QueryObservation<OtherRow>.Iterator] = []
        try await addIdleObservations(pool, to: &warm, count: 64)
        warm.removeAll()
    }
    try await waitUntil("observations to stop") { pool.observationCount == 0 }

    func snapshot() async throws -> (heap: Int, rss: Int) {
        try await Task.sleep(for: .milliseconds(100))
        trimHeap()
        return (heapBytes(), residentBytes())
    }

    // A: one task holds every iterator after its first value.
    var iteratorsHeap = 0.0
    var iteratorsRSS = 0.0
    do {
        let before = try await snapshot()
        var iterators: [QueryObservation<OtherRow>.Iterator] = []
        iterators.reserveCapacity(count)
        try await addIdleObservations(pool, to: &iterators, count: count)
        let after = try await snapshot()
        iteratorsHeap = Double(after.heap - before.heap) / Double(count)
        iteratorsRSS = Double(after.rss - before.rss) / Double(count)
        iterators.removeAll()
    }
    try await waitUntil("observations to stop") { pool.observationCount == 0 }

    // B: one consumer task per observation, suspended waiting for a second value.
    var tasksHeap = 0.0
    var tasksRSS = 0.0
    do {
        let before = try await snapshot()
        let ready = Countdown(count)
        var tasks: [Task<Void, any Error>] = []
        tasks.reserveCapacity(count)
        for id in 1...count {
            tasks.append(
                Task {
                    var values = pool.observe(OtherRow(id: id)).makeAsyncIterator()
                    _ = try await values.next()
                    ready.arrive()
                    _ = try await values.next()
                })
        }
        try await ready.done.wait("every observation's first value")
        let after = try await snapshot()
        tasksHeap = Double(after.heap - before.heap) / Double(count)
        tasksRSS = Double(after.rss - before.rss) / Double(count)
        await stop(tasks)
    }

    return [
        Sample(
            "memory.observation.heap", "5. heap per idle observation (one task holds iterators)",
            value: iteratorsHeap, unit: "bytes", target: .below(1024), higherIsBetter: false),
        Sample(
            "memory.observation.rss", "   RSS per idle observation (same)", value: iteratorsRSS, unit: "bytes",
            higherIsBetter: false),
        Sample(
            "memory.task.heap", "   heap per idle observation + its own suspended task", value: tasksHeap,
            unit: "bytes", higherIsBetter: false),
        Sample(
            "memory.task.rss", "   RSS per idle observation + its own suspended task", value: tasksRSS,
            unit: "bytes", higherIsBetter: false),
    ]
}

// MARK: - 6. Decoding

/// The raw loop: step, read the four columns with `sqlite3_column_*`, make a
/// Swift `String` from the text bytes, append a `Player`.
func rawDecode(_ db: RawDatabase) throws -> [Player] {
    let statement = try db.prepare("SELECT id, name, score, bonus FROM player")
    let handle = statement.handle
    var players: [Player] = []
    while true {
        let code = sqlite3_step(handle)
        if code == SQLITE_DONE { break }
        guard code == SQLITE_ROW else { throw RawError(description: "raw step failed: \(code)") }
        let text = sqlite3_column_text(handle, 1)
        let bytes = Int(sqlite3_column_bytes(handle, 1))
        players.append(
            Player(
                id: sqlite3_column_int64(handle, 0),
                name: String(decoding: UnsafeBufferPointer(start: text, count: bytes), as: UTF8.self),
                score: Int(sqlite3_column_int64(handle, 2)),
                bonus: sqlite3_column_double(handle, 3)))
    }
    return players
}

/// Workload 6: 100,000 rows into `[Player]` with `fetchAll(Player.self, …)`
/// in `pool.read`, against the raw loop on a connection of its own.
func decoding(_ sizes: Sizes) async throws -> [Sample] {
    let scratch = ScratchDirectory("decode")
    defer { scratch.remove() }
    let rows = sizes.decodedRows
    let path = scratch.file("players.sqlite")
    let raw = try RawDatabase(path: path)
    try raw.execute(
        """
        CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL, bonus REAL NOT NULL);
        WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < \(rows))
        INSERT INTO player (id, name, score, bonus) SELECT x, 'Player number ' || x, x * 7 % 1000, x / 8.0 FROM s;
        """)
    // One reader, and the raw loop runs on that reader's thread too: both
    // sides allocate in the same malloc arena, warmed by the first pass.
    // Otherwise each side's speed depends on its thread's arena (a fresh one
    // pays a page fault per 4 KiB; one that earlier workloads left large
    // does not), which measures the allocator, not decoding.
    let rawConnection = UncheckedSendable(raw)
    var configuration = Configuration()
    configuration.maximumReaderCount = 1
    let pool = try DatabasePool(path: path, configuration: configuration)
    defer { pool.syncClose() }

    var bestRaw = Double.infinity
    var bestDBWatch = Double.infinity
    var bestRecord = Double.infinity
    var bestFloor = Double.infinity
    // A first untimed pass of each warms the page cache and the statement caches.
    for pass in 0...sizes.decodePasses {
        let (rawPlayers, rawTime) = try await pool.read { _ in
            let start = nowNanoseconds()
            let players = try rawDecode(rawConnection.value)
            return (players, seconds(since: start))
        }
        let start = nowNanoseconds()
        let players = try await pool.read { db in
            try db.fetchAll(Player.self, sql: "SELECT id, name, score, bonus FROM player")
        }
        let dbwatchTime = seconds(since: start)
        let recordStart = nowNanoseconds()
        let records = try await pool.read { db in
            try db.fetchAll(PlayerRecord.self, sql: "SELECT id, name, score, bonus FROM player")
        }
        let recordTime = seconds(since: recordStart)
        let floor = try await pool.read { _ in try decodableFloor(rows: rows) }
        guard players.count == rows, rawPlayers.count == rows, records.count == rows,
            players.last?.name == rawPlayers.last?.name, records.last?.name == rawPlayers.last?.name
        else {
            throw RawError(
                description:
                    "decoded \(players.count), \(records.count) and \(rawPlayers.count) rows, expected \(rows)")
        }
        if pass > 0 {
            bestRaw = min(bestRaw, rawTime)
            bestDBWatch = min(bestDBWatch, dbwatchTime)
            bestRecord = min(bestRecord, recordTime)
            bestFloor = min(bestFloor, floor.decodable - floor.memberwise)
        }
    }
    let rawRate = Double(rows) / bestRaw
    let rate = Double(rows) / bestDBWatch
    let recordRate = Double(rows) / bestRecord
    let rawNanoseconds = bestRaw / Double(rows) * 1e9
    return [
        Sample("decode.raw", "6. raw SQLite: C step loop into [Player]", value: rawRate, unit: "rows/s"),
        Sample(
            "decode.dbwatch", "6. DBWatch: fetchAll(Player.self) in pool.read", value: rate, unit: "rows/s",
            ratio: rate / rawRate, against: "raw", target: .atLeastRatio(0.60)),
        Sample(
            "decode.record", "6. DBWatch: fetchAll(PlayerRecord.self), init(row:), no Decodable", value: recordRate,
            unit: "rows/s", ratio: recordRate / rawRate, against: "raw"),
        Sample(
            "decode.raw.ns", "   raw: time per row", value: rawNanoseconds, unit: "ns", higherIsBetter: false),
        Sample(
            "decode.allowance.ns", "   time per row the 60 % target allows on top of raw",
            value: rawNanoseconds * (1 / 0.6 - 1), unit: "ns", higherIsBetter: false),
        Sample(
            "decode.floor.ns", "   Decodable machinery alone (constant decoder, no SQLite)",
            value: bestFloor * 1e9, unit: "ns", ratio: bestFloor * 1e9 / (rawNanoseconds * (1 / 0.6 - 1)),
            against: "allowance", higherIsBetter: false),
    ]
}
