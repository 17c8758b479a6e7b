/// Whether the calling code runs inside a Swift task. An access's body
/// does when it runs on the calling task's thread (a claim of the idle
/// writer) or inline in a task hosted on a connection thread; it does not
/// when it runs as a queued job on a connection thread.
func runsInATask() -> Bool {
    withUnsafeCurrentTask { $0 != nil }
}
