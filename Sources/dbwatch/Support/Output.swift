import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Writes text to standard output and standard error, unbuffered: each call
/// is one `write(2)` loop, so a frame appears whole and a line reaches a
/// pipe at once.
///
/// Standard output that cannot be written ends the process, since nothing
/// it prints would be seen: a reader that closed the pipe (`| head`) ends
/// it quietly by `SIGPIPE`, as other tools end; any other failure (a full
/// disk, an I/O error) is reported on standard error with exit 74. Errors
/// writing standard error itself are ignored: there is nowhere to say them.
///
/// ```swift
/// Output.standardOutput("hello\n")
/// Output.standardError("dbwatch: no such file: x.sqlite\n")
/// ```
enum Output {
    /// Writes `text` to standard output; ends the process when it cannot.
    static func standardOutput(_ text: String) {
        let error = write(text, to: STDOUT_FILENO)
        guard error != 0 else { return }
        if error == EPIPE {
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
        }
        write("dbwatch: cannot write the output: \(String(cString: strerror(error)))\n", to: STDERR_FILENO)
        exit(ExitStatus.writeFailed.rawValue)
    }

    /// Ends the process by `SIGPIPE` as soon as the reader of standard
    /// output closes its pipe, even while nothing is written: `watch` may
    /// print nothing for hours, and `| head -1` must not wait for the next
    /// change. Does nothing when standard output is not a pipe. A thread
    /// of its own waits in `poll(2)`, which reports `POLLERR` on a pipe
    /// whose reader is gone.
    static func endWhenStandardOutputCloses() {
        var status = stat()
        guard fstat(STDOUT_FILENO, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else { return }
        let thread = Thread {
            var descriptor = pollfd(fd: STDOUT_FILENO, events: 0, revents: 0)
            while poll(&descriptor, 1, -1) < 0 && errno == EINTR {}
            guard descriptor.revents & Int16(POLLERR | POLLHUP) != 0 else { return }
            // The thread may have inherited a mask that blocks it.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_UNBLOCK, &pipeSignal, nil)
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
        }
        thread.name = "dbwatch.stdout"
        thread.start()
    }

    /// Writes `text` to standard error.
    static func standardError(_ text: String) {
        write(text, to: STDERR_FILENO)
    }

    /// Writes every byte of `text` to `descriptor`, retrying after signals.
    /// Returns 0, or the `errno` of the write that failed.
    @discardableResult
    static func write(_ text: String, to descriptor: Int32) -> Int32 {
        var text = text
        return text.withUTF8 { buffer in
            guard var base = buffer.baseAddress else { return 0 }
            var remaining = buffer.count
            while remaining > 0 {
                let written = Glibc.write(descriptor, base, remaining)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                remaining -= written
                base += written
            }
            return 0
        }
    }
}
