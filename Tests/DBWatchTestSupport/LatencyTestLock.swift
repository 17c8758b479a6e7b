import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Keeps the tests that measure latency under CPU load (shared holders,
/// which may overlap) apart from the headless-browser tests (exclusive
/// holders), which load every core for seconds and made a 2 s latency bound
/// miss. A `flock` on one file in the temporary folder: it works across the
/// test targets run in one process, and across processes.
public enum LatencyTestLock {
    /// Runs `body` holding the lock, shared or exclusive.
    public static func with<T>(exclusive: Bool, _ body: () async throws -> T) async throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dbwatch-tests-latency.lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { return try await body() }
        defer { close(descriptor) }  // releases the lock
        // `flock` blocks: on a thread of its own, not one of the cooperative pool.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                while flock(descriptor, exclusive ? LOCK_EX : LOCK_SH) != 0 && errno == EINTR {}
                continuation.resume()
            }.start()
        }
        return try await body()
    }
}
