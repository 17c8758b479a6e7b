#if canImport(Glibc)
    import Glibc
#endif

/// Writes text to standard output and standard error, unbuffered: each call
/// is one `write(2)` loop, so a frame appears whole and a line reaches a
/// pipe at once.
///
/// ```swift
/// Output.standardOutput("hello\n")
/// Output.standardError("dbwatch: no such file: x.sqlite\n")
/// ```
enum Output {
    /// Writes `text` to standard output.
    static func standardOutput(_ text: String) {
        write(text, to: STDOUT_FILENO)
    }

    /// Writes `text` to standard error.
    static func standardError(_ text: String) {
        write(text, to: STDERR_FILENO)
    }

    /// Writes every byte of `text` to `descriptor`, retrying after signals;
    /// gives up silently when the reader is gone.
    static func write(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { buffer in
            guard var base = buffer.baseAddress else { return }
            var remaining = buffer.count
            while remaining > 0 {
                let written = Glibc.write(descriptor, base, remaining)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                remaining -= written
                base += written
            }
        }
    }
}
