/// The region (tables, columns, rowids) that the statements a connection
/// runs read, while a fetch records it to know what to observe.
///
/// Stored inline in its ``Database``; `Database.recordingRegion(_:)` starts
/// and stops it, and `Database.recordReads(_:)` is the one place where a
/// statement's reads join it.
struct RegionRecorder {
    /// What the statements read since ``start()``; nil while nothing records.
    private var region: DatabaseRegion?

    /// Whether a region is being recorded.
    var isRecording: Bool { region != nil }

    /// Starts recording an empty region.
    mutating func start() {
        region = DatabaseRegion()
    }

    /// Stops recording: what the statements read.
    mutating func stop() -> DatabaseRegion {
        region.take() ?? DatabaseRegion()
    }

    /// Adds what a statement reads, while recording.
    mutating func add(_ reads: DatabaseRegion) {
        region?.formUnion(reads)
    }

    /// Stops recording for a while: the region so far, for ``resume(_:)``.
    mutating func pause() -> DatabaseRegion? {
        region.take()
    }

    /// Goes on with what ``pause()`` returned.
    mutating func resume(_ paused: DatabaseRegion?) {
        region = paused
    }
}
