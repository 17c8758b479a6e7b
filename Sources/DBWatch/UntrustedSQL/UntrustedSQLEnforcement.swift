/// What one connection keeps to enforce an ``UntrustedSQLPolicy``: the
/// policy in force, the deadline of the statement running under it, the
/// guards and the budget for temporary files that the first policy
/// installed, and the statements prepared under a policy.
///
/// Stored inline in its ``Database``; ``Database/withUntrustedSQL(_:_:)``
/// sets the policy, and the connection's prepare, step and progress
/// handler enforce it (Database+UntrustedSQL.swift).
struct UntrustedSQLEnforcement {
    /// Set inside ``Database/withUntrustedSQL(_:_:)``: the authorizer refuses all but reads.
    var policy: UntrustedSQLPolicy?
    /// When the statement running under the policy must stop.
    var deadline: ContinuousClock.Instant?
    /// The progress handler stopped the statement for its time limit.
    var timeLimitExceeded = false
    /// The guards of costly built-in functions, installed by the first policy.
    var functions: UntrustedSQLFunctions?
    /// What the temporary files opened under the policy may hold (see
    /// `DBWatchVFS.h`), created by the first policy; its files hold
    /// references of their own, so it outlives the connection if they do.
    /// Released by the connection's `deinit`.
    var temporaryStorageBudget: OpaquePointer?
    /// Statements prepared under a policy, cached apart from the others, so
    /// that SQL text DBWatch itself also uses never skips the checks.
    var statementCache: [String: Statement] = [:]

    /// Whether a policy is in force.
    var isActive: Bool { policy != nil }
}
