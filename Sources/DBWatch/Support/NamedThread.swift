import CSQLite
import Foundation

/// Starts a thread of DBWatch's own named `name` (at most 15 bytes: Linux's
/// limit) that runs `body`, with a 1 MiB stack.
func startNamedThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        nameCurrentThread(name)
        body()
    }
    thread.name = name
    thread.stackSize = 1 << 20
    thread.start()
}

/// Names the calling thread for `top -H`, `perf` and `/proc` (at most 15
/// bytes: Linux's limit).
func nameCurrentThread(_ name: String) {
    #if os(Linux)
        _ = name.withCString { dbwatch_name_current_thread($0) }
    #endif
}
