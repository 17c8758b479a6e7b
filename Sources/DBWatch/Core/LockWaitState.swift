/// Whether a connection may wait for another connection's lock now, and
/// how long the current step has waited (see Database+LockWaits.swift).
///
/// Stored inline in its ``Database``.
struct LockWaitState {
    /// Cleared while another connection's lock must fail at once instead of
    /// being waited for: a `BEGIN` on a caller's thread, the checkpoint of a
    /// close.
    var isAllowed = true
    /// How long the current statement step has slept waiting for another
    /// connection's lock: SQLite's busy timeout, which DBWatch's busy
    /// handler follows, counts the sleeps of one step.
    var waitedInStep: Duration = .zero
}
