#if canImport(Glibc)
    import Glibc
#endif

/// A file that reaches the process's size limit (`ulimit -f`) makes the
/// kernel send `SIGXFSZ`, whose default action kills the process in the
/// middle of a write. Ignored, the write fails with `EFBIG` instead: SQLite
/// rolls the transaction back and `dbwatch` reports a write failure (exit
/// 74), like a full disk. (SQLite writes on connection threads, which today
/// inherit a mask that blocks the signal; ignoring it makes that no
/// accident.)
///
/// ```swift
/// FileSizeLimitSignal.reportAsWriteFailure()   // before opening a database to write
/// ```
enum FileSizeLimitSignal {
    /// Ignores `SIGXFSZ` for the rest of the process.
    static func reportAsWriteFailure() {
        signal(SIGXFSZ, SIG_IGN)
    }
}
