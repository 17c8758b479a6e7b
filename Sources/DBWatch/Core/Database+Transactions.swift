import CSQLite

/// The kind of a transaction: when it takes the write lock.
///
/// ```swift
/// try db.inTransaction(.immediate) { … }
/// ```
public enum TransactionKind: String, Sendable {
    /// `BEGIN DEFERRED`: locks on first read or write.
    case deferred = "DEFERRED"
    /// `BEGIN IMMEDIATE`: takes the write lock at once.
    case immediate = "IMMEDIATE"
    /// `BEGIN EXCLUSIVE`: also keeps readers out (outside WAL mode).
    case exclusive = "EXCLUSIVE"
}

extension Database {
    /// Runs `body` in a transaction: commits when it returns, rolls back
    /// when it throws (and rethrows). The connection stays usable either way.
    ///
    /// Inside an open transaction, use ``inSavepoint(_:)`` to nest.
    ///
    /// ```swift
    /// try db.inTransaction(.immediate) {
    ///     try db.execute(sql: "UPDATE account SET balance = balance - 10 WHERE id = 1")
    ///     try db.execute(sql: "UPDATE account SET balance = balance + 10 WHERE id = 2")
    /// }
    /// ```
    public func inTransaction<T>(_ kind: TransactionKind = .deferred, _ body: () throws -> T) throws -> T {
        try begin(kind)
        let result: T
        do {
            result = try owningTransaction(body)
        } catch {
            rollbackIfNeeded()
            throw error
        }
        do {
            // The body may have ended the transaction itself (a failing
            // statement that SQLite rolled back on its own).
            if isInsideTransaction {
                try execute(sql: "COMMIT TRANSACTION")
            }
        } catch {
            rollbackIfNeeded()
            throw error
        }
        return result
    }

    /// Runs `body` with ``ownsTransaction`` set: the transaction belongs to
    /// the caller, which commits or rolls it back.
    @inline(__always)
    func owningTransaction<T>(_ body: () throws -> T) rethrows -> T {
        let outer = ownsTransaction
        ownsTransaction = true
        defer { ownsTransaction = outer }
        return try body()
    }

    /// The error for `BEGIN`, `COMMIT` or `ROLLBACK` run while the library
    /// owns the transaction.
    static func transactionControlRefused(_ sql: String) -> SQLiteError {
        SQLiteError(
            code: .misuse,
            message:
                "BEGIN, COMMIT and ROLLBACK cannot run inside write, read or inTransaction, which commit when "
                + "the closure returns and roll back when it throws; use a savepoint (inSavepoint) to undo part "
                + "of a transaction, or writeWithoutTransaction to manage transactions in SQL",
            sql: sql)
    }

    /// Runs `body`, which may open and end transactions in SQL (the body of
    /// `writeWithoutTransaction`): a transaction it leaves open is rolled
    /// back, and is an error.
    func refusingLeftoverTransaction<T>(_ body: () throws -> T) throws -> T {
        let result: T
        do {
            result = try body()
        } catch {
            rollbackIfNeeded()
            throw error
        }
        if isInsideTransaction {
            rollbackIfNeeded()
            throw SQLiteError(
                code: .misuse,
                message:
                    "writeWithoutTransaction left a transaction open (a BEGIN or SAVEPOINT without its COMMIT, "
                    + "ROLLBACK or RELEASE); it was rolled back")
        }
        return result
    }

    /// A switch, not a dictionary: every write begins with it, and a
    /// literal costs no hashing.
    static func beginStatement(_ kind: TransactionKind) -> String {
        switch kind {
        case .deferred: "BEGIN DEFERRED TRANSACTION"
        case .immediate: "BEGIN IMMEDIATE TRANSACTION"
        case .exclusive: "BEGIN EXCLUSIVE TRANSACTION"
        }
    }

    /// Runs `body` inside a savepoint: its changes are released into the
    /// enclosing transaction when it returns, and undone when it throws.
    /// Savepoints nest; outside a transaction a savepoint acts as one.
    ///
    /// ```swift
    /// try db.inTransaction {
    ///     try db.execute(sql: "INSERT INTO log (text) VALUES ('kept')")
    ///     try? db.inSavepoint {
    ///         try db.execute(sql: "INSERT INTO log (text) VALUES ('undone')")
    ///         throw CancellationError()
    ///     }
    /// }
    /// ```
    public func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "dbwatch_savepoint_\(savepointDepth)"
        try execute(sql: "SAVEPOINT \(name)")
        let result: T
        do {
            result = try body()
        } catch {
            if isInsideTransaction {
                withoutCancellation {
                    try? execute(sql: "ROLLBACK TO SAVEPOINT \(name)")
                    try? execute(sql: "RELEASE SAVEPOINT \(name)")
                }
            }
            throw error
        }
        if isInsideTransaction {
            do {
                try execute(sql: "RELEASE SAVEPOINT \(name)")
            } catch {
                withoutCancellation {
                    try? execute(sql: "ROLLBACK TO SAVEPOINT \(name)")
                    try? execute(sql: "RELEASE SAVEPOINT \(name)")
                }
                throw error
            }
        }
        return result
    }

    /// Rolls back the open transaction, if any; never throws. Runs even
    /// when the job was cancelled.
    func rollbackIfNeeded() {
        guard isInsideTransaction else { return }
        withoutCancellation {
            do {
                try execute(sql: "ROLLBACK TRANSACTION")
            } catch {
                logger.debug("rollback failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Runs cleanup that must happen even in a cancelled job, or one that
    /// a close stops (a rollback, restoring a pragma).
    func withoutCancellation<T>(_ body: () throws -> T) rethrows -> T {
        let flag = cancellation
        let closing = shutdown
        cancellation = nil
        shutdown = nil
        defer {
            cancellation = flag
            shutdown = closing
        }
        return try body()
    }
}

extension Database {
    /// Runs `body` in a deferred transaction during which writes fail
    /// (`PRAGMA query_only`), then ends it.
    func inReadOnlyTransaction<T>(_ body: () throws -> T) throws -> T {
        if !isReadOnlyConnection { try execute(sql: "PRAGMA query_only = 1") }
        defer { if !isReadOnlyConnection { withoutCancellation { try? execute(sql: "PRAGMA query_only = 0") } } }
        try execute(sql: "BEGIN DEFERRED TRANSACTION")
        defer { rollbackIfNeeded() }
        return try owningTransaction(body)
    }
}
