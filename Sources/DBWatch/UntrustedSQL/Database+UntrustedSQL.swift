import CDBWatchVFS
import CSQLite

extension Database {
    /// Runs `body` under `policy`: statements prepared inside may only read,
    /// each may run only for the policy's time limit, no value may grow
    /// beyond its maximum length, and their temporary files may not grow
    /// beyond the policy's maximum temporary storage.
    ///
    /// Statements prepared here are cached apart from the others, so SQL
    /// text that DBWatch itself also uses never skips the checks.
    ///
    /// ```swift
    /// let rows = try db.withUntrustedSQL { try db.fetchAll(sql: "SELECT * FROM player") }
    /// try db.withUntrustedSQL { try db.execute(sql: "DELETE FROM player") }  // throws, code .auth
    /// ```
    public func withUntrustedSQL<T>(_ policy: UntrustedSQLPolicy = UntrustedSQLPolicy(), _ body: () throws -> T)
        throws -> T
    {
        let handle = try openHandle()
        guard !untrustedSQL.isActive else { return try body() }
        if untrustedSQL.functions == nil {
            untrustedSQL.functions = try UntrustedSQLFunctions.install(on: handle, for: self)
        }
        if untrustedSQL.temporaryStorageBudget == nil {
            untrustedSQL.temporaryStorageBudget = dbwatch_temp_budget_create()
        }
        guard let budget = untrustedSQL.temporaryStorageBudget else {
            throw SQLiteError(code: .noMemory, message: "out of memory")
        }
        untrustedSQL.policy = policy
        untrustedSQL.deadline = nil
        installProgressChecks(every: UntrustedSQLPolicy.stepsBetweenChecks)
        // A negative value only reads the limit.
        let lengthLimit = sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, -1)
        if let maximum = policy.maximumValueLength {
            // Never above the connection's own limit, and at least 1 byte.
            sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, Int32(clamping: min(max(maximum, 1), Int(lengthLimit))))
        }
        let patternLimit = sqlite3_limit(handle, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, -1)
        sqlite3_limit(
            handle, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, min(patternLimit, UntrustedSQLPolicy.maximumPatternLength))
        // Temporary files opened on this thread from now on are charged to
        // the budget; no sorter worker threads, which would open theirs on
        // threads of their own.
        dbwatch_temp_budget_set_limit(budget, policy.maximumTemporaryStorage.map { Int64(max($0, 0)) } ?? -1)
        _ = dbwatch_temp_budget_take_exceeded(budget)
        let previousBudget = dbwatch_temp_budget_enter(budget)
        let workerThreads = sqlite3_limit(handle, SQLITE_LIMIT_WORKER_THREADS, 0)
        defer {
            untrustedSQL.policy = nil
            untrustedSQL.deadline = nil
            installProgressChecks()
            sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, lengthLimit)
            sqlite3_limit(handle, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, patternLimit)
            sqlite3_limit(handle, SQLITE_LIMIT_WORKER_THREADS, workerThreads)
            dbwatch_temp_budget_leave(previousBudget)
            // Files still open (a statement not reset) stay counted, unlimited.
            dbwatch_temp_budget_set_limit(budget, -1)
        }
        return try body()
    }

    /// The policy's part of an authorizer call: `SQLITE_DENY` for an
    /// action it refuses (the reason kept for the error message), nil for
    /// the authorizer to go on. Notes a pragma that only reads though SQLite
    /// does not say so (see ``checkUntrusted(_:)``).
    @inline(__always)
    func authorizeUntrusted(_ action: Int32, _ first: UnsafePointer<CChar>?, _ second: UnsafePointer<CChar>?)
        -> Int32?
    {
        if let refusal = UntrustedSQLPolicy.refusal(
            action: action, first: first.map { String(cString: $0) }, second: second.map { String(cString: $0) })
        {
            authorizer.lastRefusal = refusal
            return SQLITE_DENY
        }
        if action == SQLITE_PRAGMA, second == nil, let first,
            UntrustedSQLPolicy.readsNotMarkedReadOnly.contains(String(cString: first).lowercased())
        {
            authorizer.footprintUnderConstruction?.readsPragmaNotMarkedReadOnly = true
        }
        return nil
    }

    /// Before each step under the policy: a run of `statement` starts its
    /// time and result size at its first step; once its deadline passed,
    /// throws the time limit's error. Checked here as well as in the
    /// progress handler: a statement of few steps (one costly value per
    /// row) may never reach the handler, and the time spent reading rows
    /// between steps counts too.
    func untrustedStatementWillStep(_ statement: Statement) throws {
        guard let policy = untrustedSQL.policy else { return }
        let now = ContinuousClock.now
        if sqlite3_stmt_busy(statement.handle) == 0 || statement.untrustedDeadline == nil {
            statement.untrustedDeadline = now + policy.timeLimit
            statement.untrustedResultSize = 0
        }
        let deadline = statement.untrustedDeadline!
        // The progress handler checks the statement that steps (another
        // one may have run in between, such as a query of the schema).
        untrustedSQL.deadline = deadline
        guard now >= deadline else { return }
        abandon(statement)
        throw SQLiteError(
            code: .interrupt, message: "the query ran longer than the time limit (\(policy.timeLimit)) and was stopped",
            sql: statement.sql)
    }

    /// Adds the size of the row `statement` holds to the result's; throws
    /// ``ResultCode/tooBig`` beyond the policy's maximum result size.
    func countUntrustedRow(_ statement: Statement) throws {
        guard let maximum = untrustedSQL.policy?.maximumResultSize else { return }
        let handle = statement.handle
        let count = sqlite3_column_count(handle)
        // Every value 8 bytes, NULL and empty text too (they take memory
        // and output: counted 0, a result of NULLs had no bound), plus the
        // bytes of text and blobs.
        var size = statement.untrustedResultSize + 8 * Int(count)
        for column in 0..<count {
            switch sqlite3_column_type(handle, column) {
            case SQLITE_TEXT, SQLITE_BLOB: size += Int(sqlite3_column_bytes(handle, column))
            default: break
            }
        }
        statement.untrustedResultSize = size
        if size > maximum {
            abandon(statement)
            throw SQLiteError(
                code: .tooBig,
                message:
                    "the result is larger than the limit of \(maximum) bytes (maximum result size) and was stopped",
                sql: statement.sql)
        }
    }

    /// Checks a statement prepared under the policy: a read-only statement
    /// (as SQLite says), an `EXPLAIN`, or the read form of a pragma that
    /// only reads though SQLite does not say so (`PRAGMA journal_mode`).
    func checkUntrusted(_ statement: Statement) throws {
        let keyword = Database.leadingKeyword(statement.sql)
        let allowedKeywords: Set<String> = ["select", "with", "values", "pragma", "explain"]
        let onlyReads =
            statement.isReadOnly || sqlite3_stmt_isexplain(statement.handle) != 0
            || (keyword == "pragma" && statement.footprint.readsPragmaNotMarkedReadOnly)
        if !allowedKeywords.contains(keyword) || !onlyReads {
            let what = keyword.isEmpty ? "this statement" : keyword.uppercased()
            throw SQLiteError(code: .auth, message: "refused: \(what) is not a read-only query", sql: statement.sql)
        }
    }

    /// The first keyword of `sql`, lowercased, after spaces, comments and `(`.
    static func leadingKeyword(_ sql: String) -> String {
        var rest = Substring(sql)
        while true {
            // `;` too: SQLite skips empty statements, and keeps them in
            // the text of the statement that follows.
            rest = rest.drop { $0.isWhitespace || $0 == "(" || $0 == ";" }
            if rest.hasPrefix("--") {
                rest = rest.drop { $0 != "\n" }
            } else if rest.hasPrefix("/*") {
                guard let end = rest.range(of: "*/") else { return "" }
                rest = rest[end.upperBound...]
            } else {
                break
            }
        }
        return String(rest.prefix { $0.isLetter }).lowercased()
    }

    /// The error of a statement the policy refused.
    static func untrustedRefusal(_ refusal: String, sql: String?) -> SQLiteError {
        SQLiteError(code: .auth, message: "refused: \(refusal) is not allowed in a read-only query", sql: sql)
    }

    /// Called every ``UntrustedSQLPolicy/stepsBetweenChecks`` virtual machine steps while under a policy.
    func untrustedProgress() -> Int32 {
        guard let policy = untrustedSQL.policy else { return 0 }
        let now = ContinuousClock.now
        guard let deadline = untrustedSQL.deadline else {
            untrustedSQL.deadline = now + policy.timeLimit
            return 0
        }
        if now < deadline { return 0 }
        untrustedSQL.timeLimitExceeded = true
        return 1
    }

    /// Rewrites a failed step's error into a clear one: a write of a
    /// temporary file refused for the policy's maximum temporary storage, a
    /// refusal by the policy when SQLite re-prepared the statement inside
    /// the step (after a schema change), worded as at prepare, or an
    /// interrupt caused by the time limit.
    func untrustedError(_ error: SQLiteError) -> SQLiteError {
        if let budget = untrustedSQL.temporaryStorageBudget, dbwatch_temp_budget_take_exceeded(budget) != 0,
            error.code.primary == .full, let maximum = untrustedSQL.policy?.maximumTemporaryStorage
        {
            return SQLiteError(
                code: .tooBig,
                message:
                    "the query's temporary files are larger than the limit of \(maximum) bytes (maximum temporary storage) and it was stopped",
                sql: error.sql)
        }
        if let refusal = authorizer.lastRefusal.take() {
            return Database.untrustedRefusal(refusal, sql: error.sql)
        }
        guard untrustedSQL.timeLimitExceeded, error.code.primary == .interrupt, let policy = untrustedSQL.policy else {
            return error
        }
        untrustedSQL.timeLimitExceeded = false
        return SQLiteError(
            code: .interrupt, message: "the query ran longer than the time limit (\(policy.timeLimit)) and was stopped",
            sql: error.sql)
    }
}

extension Database {
    /// How many bytes the open temporary files charged to this
    /// connection's untrusted SQL hold (0 before its first policy).
    var temporaryStorageInUse: Int {
        untrustedSQL.temporaryStorageBudget.map { Int(dbwatch_temp_budget_used($0)) } ?? 0
    }
}
