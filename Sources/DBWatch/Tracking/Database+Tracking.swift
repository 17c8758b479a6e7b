extension Database {
    /// The region (tables and columns) that `sql` reads, from the
    /// authorizer, without running it.
    ///
    /// ```swift
    /// let region = try db.region(of: "SELECT name FROM player WHERE score > 10")
    /// region.description   // "main.player(name, score)"
    /// ```
    public func region(of sql: String) throws -> DatabaseRegion {
        try cachedStatement(sql: sql).footprint.reads
    }

    /// Chooses the position the open write transaction's commit is
    /// published at: at least `position` (positions still grow by at least
    /// one per commit). For a writer whose commits have positions of their
    /// own, such as a replica publishing its source's log positions, so
    /// that a positioned result (``PositionedResult``) and the sync
    /// protocol's positions are those. A transaction that rolls back, or
    /// writes nothing, publishes nothing; the position applies to the next
    /// commit of this write job only. Does nothing on a connection that
    /// does not write.
    ///
    /// ```swift
    /// try await pool.write { db in
    ///     try db.execute(sql: "INSERT INTO player (name) VALUES ('Barbara')")
    ///     db.setCommitPosition(0x1_6B3_7A28)
    /// }
    /// ```
    package func setCommitPosition(_ position: UInt64) {
        guard let changeCollector, let handle else { return }
        changeCollector.chooseCommitPosition(position, on: handle)
    }

    /// Runs one write job (a `write` closure): the change collector installs
    /// or removes its hooks first, depending on whether observations exist.
    func runWriteJob<T>(_ body: () throws -> T) rethrows -> T {
        guard let changeCollector else { return try body() }
        changeCollector.jobWillStart(on: self)
        defer { changeCollector.jobDidFinish(on: self) }
        return try body()
    }

    /// Runs `body` in a read-only transaction and returns its value with the
    /// region its statements read.
    func fetchRecordingRegion<T>(_ body: () throws -> T) -> (Result<T, any Error>, DatabaseRegion) {
        recordingRegion { try inReadOnlyTransaction { try body() } }
    }

    /// Runs `body` (inside a read transaction the caller opened) and
    /// returns its value with the region its statements read.
    func recordingRegion<T>(_ body: () throws -> T) -> (Result<T, any Error>, DatabaseRegion) {
        regionRecorder.start()
        let result = Result { try body() }
        return (result, regionRecorder.stop())
    }

    /// Adds `reads`, what a statement about to run reads, to the region
    /// being recorded, if one is: the one place where statements' reads are
    /// recorded. `reads` is evaluated only then (a statement's execution
    /// region may run the library's own queries, unrecorded), before the
    /// recorder is touched.
    @inline(__always)
    func recordReads(_ reads: @autoclosure () -> DatabaseRegion) {
        guard regionRecorder.isRecording else { return }
        let region = reads()
        regionRecorder.add(region)
    }

    /// Runs `body`, the library's own queries, without recording what they read.
    func withoutRecordingReads<T>(_ body: () throws -> T) rethrows -> T {
        let paused = regionRecorder.pause()
        defer { regionRecorder.resume(paused) }
        return try body()
    }
}
