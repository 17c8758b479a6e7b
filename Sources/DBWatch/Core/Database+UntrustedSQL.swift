import CSQLite

extension Database {
    /// Runs `body` under `policy`: statements prepared inside may only read,
    /// each may run only for the policy's time limit, and no value may grow
    /// beyond its maximum length.
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
        guard untrustedPolicy == nil else { return try body() }
        if untrustedFunctions == nil { untrustedFunctions = try UntrustedSQLFunctions.install(on: handle, for: self) }
        untrustedPolicy = policy
        untrustedDeadline = nil
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_progress_handler(handle, UntrustedSQLPolicy.stepsBetweenChecks, untrustedProgressHandler, context)
        // A negative value only reads the limit.
        let lengthLimit = sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, -1)
        if let maximum = policy.maximumValueLength {
            // Never above the connection's own limit, and at least 1 byte.
            sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, Int32(clamping: min(max(maximum, 1), Int(lengthLimit))))
        }
        let patternLimit = sqlite3_limit(handle, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, -1)
        sqlite3_limit(
            handle, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, min(patternLimit, UntrustedSQLPolicy.maximumPatternLength))
        defer {
            untrustedPolicy = nil
            untrustedDeadline = nil
            sqlite3_progress_handler(handle, 0, nil, nil)
            sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, lengthLimit)
            sqlite3_limit(handle, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, patternLimit)
        }
        return try body()
    }

    /// Before each step under the policy: a run of `statement` starts its
    /// time and result size at its first step; once its deadline passed,
    /// throws the time limit's error. Checked here as well as in the
    /// progress handler: a statement of few steps (one costly value per
    /// row) may never reach the handler, and the time spent reading rows
    /// between steps counts too.
    func untrustedStatementWillStep(_ statement: Statement) throws {
        guard let policy = untrustedPolicy else { return }
        let now = ContinuousClock.now
        if sqlite3_stmt_busy(statement.handle) == 0 || statement.untrustedDeadline == nil {
            statement.untrustedDeadline = now + policy.timeLimit
            statement.untrustedResultSize = 0
        }
        let deadline = statement.untrustedDeadline!
        // The progress handler checks the statement that steps (another
        // one may have run in between, such as a query of the schema).
        untrustedDeadline = deadline
        guard now >= deadline else { return }
        abandon(statement)
        throw SQLiteError(
            code: .interrupt, message: "the query ran longer than the time limit (\(policy.timeLimit)) and was stopped",
            sql: statement.sql)
    }

    /// Adds the size of the row `statement` holds to the result's; throws
    /// ``ResultCode/tooBig`` beyond the policy's maximum result size.
    func countUntrustedRow(_ statement: Statement) throws {
        guard let maximum = untrustedPolicy?.maximumResultSize else { return }
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
    fileprivate func untrustedProgress() -> Int32 {
        guard let policy = untrustedPolicy else { return 0 }
        let now = ContinuousClock.now
        guard let deadline = untrustedDeadline else {
            untrustedDeadline = now + policy.timeLimit
            return 0
        }
        if now < deadline { return 0 }
        untrustedTimeLimitExceeded = true
        return 1
    }

    /// Rewrites a failed step's error into a clear one: a refusal by the
    /// policy when SQLite re-prepared the statement inside the step (after
    /// a schema change), worded as at prepare, or an interrupt caused by
    /// the time limit.
    func untrustedError(_ error: SQLiteError) -> SQLiteError {
        if let refusal = lastRefusal {
            lastRefusal = nil
            return Database.untrustedRefusal(refusal, sql: error.sql)
        }
        guard untrustedTimeLimitExceeded, error.code.primary == .interrupt, let policy = untrustedPolicy else {
            return error
        }
        untrustedTimeLimitExceeded = false
        return SQLiteError(
            code: .interrupt, message: "the query ran longer than the time limit (\(policy.timeLimit)) and was stopped",
            sql: error.sql)
    }
}

private func untrustedProgressHandler(_ context: UnsafeMutableRawPointer?) -> Int32 {
    guard let context else { return 0 }
    return Unmanaged<Database>.fromOpaque(context).takeUnretainedValue().untrustedProgress()
}
