import ArgumentParser
import DBWatch

/// The words `dbwatch` prints on standard error for a failure: what went
/// wrong, SQLite's message and code, and for SQL the statement with a caret
/// under the position SQLite names.
///
/// ```
/// dbwatch: query 1: near "FORM": syntax error (SQLite error 1: SQL logic error)
///     SELECT * FORM player
///              ^
/// ```
enum ErrorReport {
    /// The report for `error`, several lines, without a final newline.
    ///
    /// Control characters are shown escaped (`\x1b`) on every line: file
    /// names, SQLite's messages (which quote the SQL) and records read from
    /// the database must not move the cursor or change colours.
    ///
    /// - Parameters:
    ///   - error: the failure.
    ///   - context: what was being done, for example `query 2`; `nil` for none.
    ///   - sql: the user's SQL, shown when the error is about it.
    ///   - readOnlyCommand: the command only reads (`watch`, `explain`):
    ///     a failed write is then SQLite's own files, not the user's data.
    static func text(
        for error: any Error, context: String? = nil, sql: String? = nil, readOnlyCommand: Bool = false
    ) -> String {
        unsafeText(for: error, context: context, sql: sql, readOnlyCommand: readOnlyCommand)
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { CellText.sanitized($0.replacingOccurrences(of: "\t", with: " ")) }
            .joined(separator: "\n")
    }

    /// The report as ``text(for:context:sql:readOnlyCommand:)`` gives it, before control
    /// characters are escaped.
    private static func unsafeText(
        for error: any Error, context: String?, sql: String?, readOnlyCommand: Bool
    ) -> String {
        let prefix = "dbwatch: " + (context.map { "\($0): " } ?? "")
        switch error {
        case let error as SQLiteError:
            var lines = [prefix + headline(of: error, readOnlyCommand: readOnlyCommand)]
            let status = ExitStatus(classifying: error)
            if status == .badSQL || status == .refused || status == .timeLimit {
                lines += statementLines(error: error, userSQL: sql)
            }
            return lines.joined(separator: "\n")
        case let error as MigrationError:
            var lines = [prefix + error.description]
            if let line = error.line, let statement = error.statement, let offset = error.sqliteError?.offset {
                lines += caretLines(sql: statement, offset: offset, firstLine: line)
            }
            return lines.joined(separator: "\n")
        default:
            return prefix + "\(error)"
        }
    }

    /// Prints the report for `error` on standard error and returns the exit
    /// code to throw.
    ///
    /// ```swift
    /// catch { throw ErrorReport.exit(for: error, sql: sql) }
    /// ```
    static func exit(
        for error: any Error, context: String? = nil, sql: String? = nil, readOnlyCommand: Bool = false
    ) -> ExitCode {
        if let exitCode = error as? ExitCode { return exitCode }
        Output.standardError(text(for: error, context: context, sql: sql, readOnlyCommand: readOnlyCommand) + "\n")
        return ExitStatus(classifying: error).exitCode
    }

    /// What went wrong, with SQLite's message and code, on one line.
    static func headline(of error: SQLiteError, readOnlyCommand: Bool = false) -> String {
        let message = error.message ?? error.code.description
        let code = codeText(of: error)
        if error.isAuthorizerRefusal && error.code.primary != .auth {
            return "refused: \(message) (watched and explained SQL may only read)"
        }
        if error.code.isWriteFailure {
            if readOnlyCommand {
                return "cannot write SQLite's files next to the database (its -shm or -wal): \(message) \(code); "
                    + "the database was not changed"
            }
            return "cannot write the database: \(message) \(code); the failed transaction was rolled back"
        }
        switch error.code.primary {
        case .auth, .interrupt:
            return message
        case .busy, .locked:
            return "\(message) \(code): another connection holds its lock; try again when it is done"
        case .misuse:
            if message.contains("more than one statement") {
                return "give one statement per SQL argument: this SQL holds more than one"
            }
            if message.contains("holds no statement") { return "the SQL holds no statement" }
            if message.contains("wrong number of arguments") { return message + " (give one --arg per ?)" }
            return message
        case .readOnly:
            switch error.code.rawValue {
            case 1544:  // SQLITE_READONLY_DIRECTORY
                return "the database's folder is read-only, and SQLite must create its -wal, -shm or -journal "
                    + "file there: \(message) \(code)"
            case 776:  // SQLITE_READONLY_ROLLBACK
                return "an interrupted write left a hot journal (the -journal file) that must be rolled back "
                    + "by a connection with write access first: \(message) \(code)"
            default:
                return "cannot write the database: it is read-only (file permissions or a read-only mount): "
                    + "\(message) \(code)"
            }
        case .perm:
            return "cannot open the database: permission denied: \(message) \(code)"
        case .cannotOpen:
            return "cannot open the database (check that the path and its folder exist and are accessible, "
                + "and that the folder is writable for a new file): \(message) \(code)"
        case .notADatabase, .corrupt, .ioError:
            return "cannot read the database: \(message) \(code)"
        default:
            return "\(message) \(code)"
        }
    }

    /// `(SQLite error 1: SQL logic error)`, without the words when the
    /// message already says them.
    private static func codeText(of error: SQLiteError) -> String {
        let words = error.code.description
        return error.message == words || error.message?.hasPrefix(words) == true
            ? "(SQLite error \(error.code.rawValue))" : "(SQLite error \(error.code.rawValue): \(words))"
    }

    /// The statement, with a caret under the error offset when SQLite gave one.
    static func statementLines(error: SQLiteError, userSQL: String?) -> [String] {
        if let offset = error.offset, let sql = error.sql ?? userSQL, offset <= sql.utf8.count {
            return caretLines(sql: sql, offset: offset)
        }
        guard let sql = userSQL ?? error.sql else { return [] }
        let flat = CellText.sanitized(sql.split(whereSeparator: \.isNewline).joined(separator: " "))
        return ["    " + CellText.truncated(flat, toWidth: 200)]
    }

    /// The line of `sql` holding byte `offset`, and a caret under it.
    ///
    /// ```swift
    /// ErrorReport.caretLines(sql: "SELECT * FORM t", offset: 9)
    /// // ["    SELECT * FORM t", "             ^"]
    /// ```
    ///
    /// - Parameters:
    ///   - sql: the statement.
    ///   - offset: a UTF-8 byte offset in `sql`.
    ///   - firstLine: the line number of the statement's first line in its
    ///     file, to name the line; `nil` names it only for multi-line SQL.
    static func caretLines(sql: String, offset: Int, firstLine: Int? = nil) -> [String] {
        let bytes = Array(sql.utf8)
        let offset = min(max(0, offset), bytes.count)
        var lineStart = offset
        while lineStart > 0 && bytes[lineStart - 1] != UInt8(ascii: "\n") { lineStart -= 1 }
        var lineEnd = offset
        while lineEnd < bytes.count && bytes[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
        let lineNumber = bytes[..<lineStart].filter { $0 == UInt8(ascii: "\n") }.count
        let before = String(decoding: bytes[lineStart..<offset], as: UTF8.self)
        let line = String(decoding: bytes[lineStart..<lineEnd], as: UTF8.self)
        let shownBefore = CellText.sanitized(before.replacingOccurrences(of: "\t", with: " "))
        let shownLine = CellText.sanitized(line.replacingOccurrences(of: "\t", with: " "))
        var lines: [String] = []
        if let firstLine {
            lines.append("  at line \(firstLine + lineNumber):")
        } else if bytes.contains(UInt8(ascii: "\n")) {
            lines.append("  at line \(lineNumber + 1) of the SQL:")
        }
        lines.append("    " + shownLine)
        lines.append("    " + String(repeating: " ", count: CellText.width(of: shownBefore)) + "^")
        return lines
    }
}
