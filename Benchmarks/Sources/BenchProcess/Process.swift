#if canImport(Glibc)
    import Glibc
#endif

/// Monotonic nanoseconds (`CLOCK_MONOTONIC`): one clock for every process of
/// the machine, so the server's commit time and the client's receipt time
/// can be subtracted.
@inline(__always)
public func nowNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Raises this process's soft limit on open files to its hard limit and
/// returns the new soft limit.
public func raiseFileLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return Int(limit.rlim_cur)
}

/// User plus system CPU time of this process, in nanoseconds (`getrusage`).
public func cpuNanoseconds() -> UInt64 {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func nanoseconds(_ time: timeval) -> UInt64 {
        UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1_000
    }
    return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
}

/// Resident set size in bytes (`VmRSS` of /proc/self/status), after
/// returning freed heap memory to the system so that differences mean something.
public func residentBytes() -> Int {
    trimHeap()
    guard let file = fopen("/proc/self/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(cString: line)
        if text.hasPrefix("VmRSS:") {
            let kilobytes =
                text.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) } ?? 0
            return kilobytes * 1024
        }
    }
    return 0
}

/// `malloc_trim(0)`: glibc's, looked up at run time (`malloc.h` is not in
/// the Glibc module); nothing when absent.
private func trimHeap() {
    typealias Trim = @convention(c) (Int) -> Int32
    guard let symbol = dlsym(nil, "malloc_trim") else { return }
    _ = unsafeBitCast(symbol, to: Trim.self)(0)
}
