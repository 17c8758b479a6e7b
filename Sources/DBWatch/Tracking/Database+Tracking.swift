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
        regionRecorder = DatabaseRegion()
        let result = Result { try body() }
        let region = regionRecorder ?? DatabaseRegion()
        regionRecorder = nil
        return (result, region)
    }
}
