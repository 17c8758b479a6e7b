import CSQLite

extension Database {
    /// How many steps of the virtual machine run between two checks of the
    /// access's cancellation and the queue's shutdown by a running statement.
    static let stepsBetweenCancellationChecks: Int32 = 1000

    /// Makes a running statement check, every
    /// ``stepsBetweenCancellationChecks`` steps, whether its access was
    /// cancelled or its queue shut down, and stop if so.
    ///
    /// `sqlite3_interrupt` alone can miss: an interrupt that lands after
    /// ``step(_:)`` checked the flags but before SQLite counts the statement
    /// as running is cleared by `sqlite3_step`, and an endless statement
    /// would then never stop. The flags are set before the interrupt, so
    /// this check sees them. Untrusted SQL checks its time limit in the
    /// same handler, more often (see ``withUntrustedSQL(_:_:)``).
    func installProgressChecks(every steps: Int32 = Database.stepsBetweenCancellationChecks) {
        guard let handle else { return }
        sqlite3_progress_handler(handle, steps, progressHandler, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Whether the running statement must stop: `1` stops it with `SQLITE_INTERRUPT`.
    fileprivate func progressCheck() -> Int32 {
        if let cancellation, cancellation.isSet { return 1 }
        if isShuttingDown { return 1 }
        return untrustedSQL.isActive ? untrustedProgress() : 0
    }
}

private func progressHandler(_ context: UnsafeMutableRawPointer?) -> Int32 {
    guard let context else { return 0 }
    return Unmanaged<Database>.fromOpaque(context).takeUnretainedValue().progressCheck()
}
