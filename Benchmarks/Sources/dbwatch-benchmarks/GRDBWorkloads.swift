// The same workloads on GRDB.swift 7.10.0, for comparison in the same run
// (`--grdb`). Built only with the package trait `GRDB` (on by default).
//
// This file imports GRDB and not DBWatch: both libraries name their types
// `Database`, `DatabasePool`, `Row`…, and imports are per file.

#if GRDB
    import CSQLiteRaw
    import Foundation
    import GRDB

    extension Player: FetchableRecord {}
    extension Item: FetchableRecord {}

    /// The same columns read by position with GRDB's `init(row:)`, as
    /// DBWatch's `PlayerRecord` reads them.
    struct GRDBPlayerRecord: FetchableRecord {
        var id: Int64
        var name: String
        var score: Int
        var bonus: Double

        init(row: Row) throws {
            id = try row.decode(Int64.self, atIndex: 0)
            name = try row.decode(String.self, atIndex: 1)
            score = try row.decode(Int.self, atIndex: 2)
            bonus = try row.decode(Double.self, atIndex: 3)
        }
    }

    func grdbWorkloads() throws -> [Workload] {
        [
            Workload(name: "grdb-write", run: grdbWriteOverhead),
            Workload(name: "grdb-observed", run: grdbObservedWrites),
            Workload(name: "grdb-latency", run: grdbLatency),
            Workload(name: "grdb-fanout", run: grdbFanOut),
            Workload(name: "grdb-memory", run: grdbMemory),
            Workload(name: "grdb-decode", run: grdbDecoding),
        ]
    }

    /// A GRDB pool opened like DBWatch's: WAL (GRDB's pool default) and
    /// `synchronous = NORMAL`.
    private func openPool(_ path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        return try DatabasePool(path: path, configuration: configuration)
    }

    /// One GRDB async `write` per insert, the same single-row insert through
    /// a cached statement.
    private func grdbInsert(_ pool: DatabasePool, _ values: Range<Int>) async throws {
        for value in values {
            try await pool.write { db in
                try db.cachedStatement(sql: "INSERT INTO t (v) VALUES (?)").execute(arguments: [value])
            }
        }
    }

    /// Raw and GRDB inserts interleaved in blocks, like ``interleavedRates``;
    /// a GRDB block also stops after `blockBudget` seconds, so that a slow
    /// configuration (thousands of observers) measures a rate without
    /// running for minutes.
    private func rawAndGRDBRates(
        raw: RawInserter, pool: DatabasePool, sizes: Sizes, offset: inout Int, blockBudget: Double = 0.4
    ) async throws -> (raw: Double, grdb: Double) {
        let blockSize = sizes.inserts / sizes.insertBlocks
        raw.run(offset..<(offset + sizes.warmupInserts / 5))
        try await grdbInsert(pool, offset..<(offset + sizes.warmupInserts / 5))
        offset += sizes.warmupInserts / 5
        var rawTime: UInt64 = 0
        var grdbTime: UInt64 = 0
        var grdbCount = 0
        for _ in 0..<sizes.insertBlocks {
            var start = nowNanoseconds()
            raw.run(offset..<(offset + blockSize))
            rawTime += nowNanoseconds() - start
            start = nowNanoseconds()
            var done = 0
            while done < blockSize {
                try await grdbInsert(pool, (offset + done)..<(offset + done + 10))
                done += 10
                if seconds(since: start) > blockBudget { break }
            }
            grdbTime += nowNanoseconds() - start
            grdbCount += done
            offset += blockSize
        }
        return (
            Double(blockSize * sizes.insertBlocks) / (Double(rawTime) / 1e9),
            Double(grdbCount) / (Double(grdbTime) / 1e9)
        )
    }

    private typealias IdleIterator = AsyncValueObservation<Int?>.Iterator

    private func addIdleObservations(_ pool: DatabasePool, to iterators: inout [IdleIterator], count: Int) async throws
    {
        guard count > 0 else { return }
        let first = iterators.count
        for id in (first + 1)...(first + count) {
            let observation = ValueObservation.tracking { db in
                try Int.fetchOne(db, sql: "SELECT v FROM other WHERE id = ?", arguments: [id])
            }
            iterators.append(observation.values(in: pool).makeAsyncIterator())
        }
        for index in first..<iterators.count {
            guard try await iterators[index].next() != nil else {
                throw RawError(description: "GRDB observation ended")
            }
        }
    }

    private func createTables(_ pool: DatabasePool, otherRows: Int) async throws {
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
            try db.execute(sql: "CREATE TABLE other (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
            let insert = try db.cachedStatement(sql: "INSERT INTO other (id, v) VALUES (?, ?)")
            for id in 0..<otherRows { try insert.execute(arguments: [id + 1, id + 1]) }
        }
    }

    // MARK: - 1.

    func grdbWriteOverhead(_ sizes: Sizes) async throws -> [Sample] {
        let scratch = ScratchDirectory("grdb-write")
        defer { scratch.remove() }
        let raw = try RawInserter(path: scratch.file("raw.sqlite"))
        let pool = try openPool(scratch.file("grdb.sqlite"))
        try await createTables(pool, otherRows: sizes.idleCounts.max()!)
        var samples: [Sample] = []
        var offset = 0
        var iterators: [IdleIterator] = []
        var none = 0.0
        for count in [0] + sizes.idleCounts {
            let start = nowNanoseconds()
            try await addIdleObservations(pool, to: &iterators, count: count - iterators.count)
            let registration = seconds(since: start)
            let rates = try await rawAndGRDBRates(raw: raw, pool: pool, sizes: sizes, offset: &offset)
            if count == 0 {
                none = rates.grdb
                samples += [
                    Sample(
                        "grdb.insert.raw", "G1. raw SQLite: insert transactions", value: rates.raw, unit: "inserts/s"),
                    Sample(
                        "grdb.insert.idle-0", "G1. GRDB write, no observation", value: rates.grdb, unit: "inserts/s",
                        ratio: rates.grdb / rates.raw, against: "raw"),
                ]
            } else {
                samples += [
                    Sample(
                        "grdb.insert.idle-\(count)", "G1. GRDB write, \(grouped(count)) idle obs. of another table",
                        value: rates.grdb, unit: "inserts/s", ratio: rates.grdb / none, against: "no-obs"),
                    Sample(
                        "grdb.insert.idle-\(count).raw", "    same, as a ratio of raw", value: rates.grdb,
                        unit: "inserts/s", ratio: rates.grdb / rates.raw, against: "raw"),
                    Sample(
                        "grdb.insert.idle-\(count).registration", "    registering them (first values included)",
                        value: registration * 1000, unit: "ms", higherIsBetter: false),
                ]
            }
        }
        iterators.removeAll()
        return samples
    }

    // MARK: - 2.

    func grdbObservedWrites(_ sizes: Sizes) async throws -> [Sample] {
        let scratch = ScratchDirectory("grdb-observed")
        defer { scratch.remove() }
        var samples: [Sample] = []
        for observers in [1, 10] {
            let raw = try RawInserter(path: scratch.file("raw-\(observers).sqlite"))
            let pool = try openPool(scratch.file("grdb-\(observers).sqlite"))
            try await createTables(pool, otherRows: 0)
            let ready = Countdown(observers)
            let tasks = (0..<observers).map { salt in
                Task {
                    let observation = ValueObservation.tracking { db in
                        try (Int.fetchOne(db, sql: "SELECT count(*) FROM t") ?? 0) + salt
                    }
                    var isFirst = true
                    for try await _ in observation.values(in: pool) where isFirst {
                        isFirst = false
                        ready.arrive()
                    }
                }
            }
            try await ready.done.wait("every observation's first value")
            var offset = 0
            let rates = try await rawAndGRDBRates(raw: raw, pool: pool, sizes: sizes, offset: &offset)
            await stop(tasks)
            samples += [
                Sample(
                    "grdb.observed.raw.\(observers)", "G2. raw SQLite: insert transactions", value: rates.raw,
                    unit: "inserts/s"),
                Sample(
                    "grdb.observed.\(observers)", "G2. GRDB write, \(observers) observation(s) of the written table",
                    value: rates.grdb, unit: "inserts/s", ratio: rates.grdb / rates.raw, against: "raw"),
            ]
        }
        return samples
    }

    // MARK: - 3.

    func grdbLatency(_ sizes: Sizes) async throws -> [Sample] {
        let scratch = ScratchDirectory("grdb-latency")
        defer { scratch.remove() }
        let pool = try openPool(scratch.file("grdb.sqlite"))
        try await createTables(pool, otherRows: 0)
        let probe = LatencyProbe()
        let consumer = Task {
            let observation = ValueObservation.tracking { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") ?? 0
            }
            for try await count in observation.values(in: pool) { probe.deliver(count) }
        }
        _ = await probe.stamp(of: 0)
        var fromReturn: [Double] = []
        var fromClosureEnd: [Double] = []
        let warmup = 100
        for index in 0..<(sizes.latencyCommits + warmup) {
            let closureEnd = try await pool.write { db in
                try db.cachedStatement(sql: "INSERT INTO t (v) VALUES (?)").execute(arguments: [index])
                return nowNanoseconds()
            }
            let returned = nowNanoseconds()
            let received = await probe.stamp(of: index + 1)
            guard index >= warmup else { continue }
            fromReturn.append(Double(Int64(bitPattern: received &- returned)) / 1000)
            fromClosureEnd.append(Double(Int64(bitPattern: received &- closureEnd)) / 1000)
        }
        await stop([consumer])
        fromReturn.sort()
        fromClosureEnd.sort()
        return [
            Sample(
                "grdb.latency.return.p50", "G3. GRDB: write returned → value received, p50",
                value: percentile(fromReturn, 0.5), unit: "µs", higherIsBetter: false),
            Sample(
                "grdb.latency.return.p99", "G3. GRDB: write returned → value received, p99",
                value: percentile(fromReturn, 0.99), unit: "µs", higherIsBetter: false),
            Sample(
                "grdb.latency.closure.p50", "    write closure ended → value received, p50",
                value: percentile(fromClosureEnd, 0.5), unit: "µs", higherIsBetter: false),
        ]
    }

    // MARK: - 4.

    func grdbFanOut(_ sizes: Sizes) async throws -> [Sample] {
        let scratch = ScratchDirectory("grdb-fanout")
        defer { scratch.remove() }
        let rows = sizes.fanOutRows
        let pool = try openPool(scratch.file("grdb.sqlite"))
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
            try db.execute(
                sql:
                    "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < ?) INSERT INTO t (id, v) SELECT x, x FROM s",
                arguments: [rows])
        }
        let ready = Countdown(rows + 1)
        let updated = Countdown(rows)
        var tasks: [Task<Void, any Error>] = []
        for id in 1...rows {
            tasks.append(
                Task {
                    let observation = ValueObservation.tracking { db in
                        try Item.fetchOne(db, sql: "SELECT * FROM t WHERE id = ?", arguments: [id])
                    }
                    var values = observation.values(in: pool).makeAsyncIterator()
                    _ = try await values.next()
                    ready.arrive()
                    while let item = try await values.next() {
                        if item?.v == Int64(id) + 1 {
                            updated.arrive()
                            return
                        }
                    }
                })
        }
        let countTask = Task {
            let observation = ValueObservation.tracking { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") }
            var values = observation.values(in: pool).makeAsyncIterator()
            _ = try await values.next()
            ready.arrive()
            while try await values.next() != nil {}
        }
        try await ready.done.wait("every observation's first value")
        try await Task.sleep(for: .milliseconds(100))
        let start = nowNanoseconds()
        try await pool.write { db in try db.execute(sql: "UPDATE t SET v = v + 1") }
        let writeReturned = nowNanoseconds()
        try await updated.done.wait("every observation's new value")
        let total = Double(updated.lastArrival - start) / 1e6
        for task in tasks { try await task.value }
        await stop([countTask])
        return [
            Sample(
                "grdb.fanout", "G4. GRDB: UPDATE → \(grouped(rows)) rows refreshed", value: total, unit: "ms",
                higherIsBetter: false),
            Sample(
                "grdb.fanout.write", "    of which until the write returned",
                value: Double(writeReturned - start) / 1e6,
                unit: "ms", higherIsBetter: false),
        ]
    }

    // MARK: - 5.

    func grdbMemory(_ sizes: Sizes) async throws -> [Sample] {
        let scratch = ScratchDirectory("grdb-memory")
        defer { scratch.remove() }
        let count = sizes.memoryObservations
        let pool = try openPool(scratch.file("grdb.sqlite"))
        try await createTables(pool, otherRows: count)
        do {
            var warm: [IdleIterator] = []
            try await addIdleObservations(pool, to: &warm, count: 64)
            warm.removeAll()
        }
        try await Task.sleep(for: .milliseconds(200))
        trimHeap()
        let heapBefore = heapBytes()
        let rssBefore = residentBytes()
        var iterators: [IdleIterator] = []
        iterators.reserveCapacity(count)
        try await addIdleObservations(pool, to: &iterators, count: count)
        try await Task.sleep(for: .milliseconds(100))
        trimHeap()
        let heap = Double(heapBytes() - heapBefore) / Double(count)
        let rss = Double(residentBytes() - rssBefore) / Double(count)
        iterators.removeAll()
        return [
            Sample(
                "grdb.memory.heap", "G5. GRDB: heap per idle observation (one task holds iterators)", value: heap,
                unit: "bytes", higherIsBetter: false),
            Sample(
                "grdb.memory.rss", "    RSS per idle observation (same)", value: rss, unit: "bytes",
                higherIsBetter: false),
        ]
    }

    // MARK: - 6.

    func grdbDecoding(_ sizes: Sizes) async throws -> [Sample] {
        let scratch = ScratchDirectory("grdb-decode")
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
        let rawConnection = UncheckedSendable(raw)
        var configuration = Configuration()
        configuration.maximumReaderCount = 1
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        let pool = try DatabasePool(path: path, configuration: configuration)
        var bestRaw = Double.infinity
        var bestGRDB = Double.infinity
        var bestRecord = Double.infinity
        for pass in 0...sizes.decodePasses {
            // On the reader's thread, as in workload 6: both sides allocate
            // in the same warm malloc arena.
            let (rawPlayers, rawTime) = try await pool.read { _ in
                let start = nowNanoseconds()
                let players = try rawDecode(rawConnection.value)
                return (players, seconds(since: start))
            }
            var start = nowNanoseconds()
            let players = try await pool.read { db in
                try Player.fetchAll(db, sql: "SELECT id, name, score, bonus FROM player")
            }
            let grdbTime = seconds(since: start)
            start = nowNanoseconds()
            let records = try await pool.read { db in
                try GRDBPlayerRecord.fetchAll(db, sql: "SELECT id, name, score, bonus FROM player")
            }
            let recordTime = seconds(since: start)
            guard players.count == rows, rawPlayers.count == rows, records.count == rows else {
                throw RawError(description: "GRDB decoded \(players.count) and \(records.count) rows, expected \(rows)")
            }
            if pass > 0 {
                bestRaw = min(bestRaw, rawTime)
                bestGRDB = min(bestGRDB, grdbTime)
                bestRecord = min(bestRecord, recordTime)
            }
        }
        return [
            Sample(
                "grdb.decode.raw", "G6. raw SQLite: C step loop into [Player]", value: Double(rows) / bestRaw,
                unit: "rows/s"),
            Sample(
                "grdb.decode", "G6. GRDB: Player.fetchAll (Decodable record) in pool.read",
                value: Double(rows) / bestGRDB, unit: "rows/s", ratio: bestRaw / bestGRDB, against: "raw"),
            Sample(
                "grdb.decode.record", "G6. GRDB: fetchAll of init(row:) by position in pool.read",
                value: Double(rows) / bestRecord, unit: "rows/s", ratio: bestRaw / bestRecord, against: "raw"),
        ]
    }
#else
    func grdbWorkloads() throws -> [Workload] {
        throw RawError(
            description:
                "this binary was built without GRDB: build with the default traits (swift build -c release --package-path Benchmarks)"
        )
    }
#endif
