import Foundation
import Synchronization

/// Threads that keep the cores busy with arithmetic while `body` runs, as a
/// build or a busy server does: other processes then wait for a core.
/// Never while a headless-browser test runs (see ``LatencyTestLock``).
public func withCPULoad<T>(threads: Int, _ body: () async throws -> T) async throws -> T {
    try await LatencyTestLock.with(exclusive: false) {
        let load = CPULoad(threads: threads)
        defer { load.stop() }
        return try await body()
    }
}

/// Spinning threads, stopped and joined by `stop()`.
final class CPULoad: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)
    private let threads: Int

    init(threads: Int) {
        self.threads = threads
        for _ in 0..<threads {
            Thread { [self] in spin() }.start()
        }
    }

    private func spin() {
        var x: UInt64 = 1
        while !stopped.load(ordering: .relaxed) {
            for _ in 0..<10_000 { x = x &* 6_364_136_223_846_793_005 &+ 1 }
        }
        withExtendedLifetime(x) {}
        exited.signal()
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        for _ in 0..<threads { exited.wait() }
    }
}
