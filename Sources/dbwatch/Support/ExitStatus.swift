import ArgumentParser
import DBWatch
import DBWatchPostgres

/// The exit codes of `dbwatch`, documented in `--help` and Documentation/CommandLineTool.md.
///
/// ```swift
/// throw ExitStatus.refused.exitCode   // exits with 67
/// ```
enum ExitStatus: Int32, CaseIterable, Sendable {
    /// Success, or `watch`, `serve`, `demo` and `replicate` stopped with
    /// Ctrl-C or `SIGTERM`.
    case success = 0
    /// Any other failure.
    case failure = 1
    /// Bad command-line arguments (argument-parser's validation exit code).
    case usage = 64
    /// Bad SQL or bad migrations: a syntax error, no such table or column
    /// when the query starts, a wrong number of `--arg` values, a value or
    /// a result beyond its size limit, a migration that fails or a
    /// migration history that does not match.
    case badSQL = 65
    /// The database is missing, unreadable, not a database or corrupt (also
    /// an unreadable migrations directory).
    case unavailable = 66
    /// The statement was refused: user SQL may only read.
    case refused = 67
    /// The query ran longer than `--time-limit` and was stopped.
    case timeLimit = 68
    /// `serve` cannot listen on its address: another server uses it, or it
    /// is not this machine's or not allowed (`EX_UNAVAILABLE`).
    case cannotListen = 69
    /// Storing data failed: the disk is full, the file reached its size
    /// limit, or the operating system failed a write (`EX_IOERR`). The
    /// failing transaction was rolled back; earlier commits are intact.
    /// Also standard output that cannot be written (see ``Output``).
    case writeFailed = 74
    /// The database is locked by another connection beyond the busy
    /// timeout (`EX_TEMPFAIL`): try again. Also a replication slot that
    /// `slots drop` finds in use.
    case locked = 75
    /// PostgreSQL (`EX_PROTOCOL`): `replicate` stopped on a fatal
    /// `ReplicaError` (a schema change, an unsupported type, a table or its
    /// slot missing…; the SQLite file keeps the last state applied), or
    /// `slots` could not reach PostgreSQL or PostgreSQL refused.
    case postgres = 76
    /// Ctrl-C, `SIGTERM` or `SIGHUP` stopped `migrate` or `explain` before the work
    /// was done (a migration in progress is rolled back); `watch` and
    /// `demo` exit 0 instead.
    case interrupted = 130

    /// The argument-parser exit code that ends the process with this status.
    var exitCode: ExitCode { ExitCode(rawValue) }

    /// The status for `error`.
    ///
    /// ```swift
    /// ExitStatus(classifying: SQLiteError(code: .auth))   // .refused
    /// ```
    init(classifying error: any Error) {
        switch error {
        case let failure as CommandFailure:
            self = failure.status
        case is Interrupted:
            self = .interrupted
        case let error as SQLiteError:
            self = error.isAuthorizerRefusal ? .refused : ExitStatus(code: error.code)
        case is DatabaseFileReplacedError:
            self = .unavailable
        case let error as ReplicaError:
            self = error.code == .invalidConfiguration ? .usage : .postgres
        case let error as ReplicationSlotError:
            switch error.code {
            case .notReplicaSlot, .otherDatabase: self = .usage
            case .slotActive: self = .locked
            case .sourceFailed: self = .postgres
            default: self = .failure
            }
        case let error as MigrationError:
            switch error.code {
            case .unreadable: self = .unavailable
            case .noSuchMigration: self = .usage
            case .statementFailed:
                self = error.sqliteError.map { ExitStatus(failedMigrationStatementCode: $0.code) } ?? .badSQL
            default:
                // The files or the history are wrong: invalid names, duplicate
                // numbers, gaps, encodings, foreign key violations, a history
                // that does not match or is invalid.
                self = .badSQL
            }
        default:
            self = .failure
        }
    }

    /// The status for a SQLite result code.
    init(code: ResultCode) {
        // Before the families: a full disk and failed writes (`.full`, some
        // `.ioError` codes) are write failures; other I/O errors are reads.
        if code.isWriteFailure {
            self = .writeFailed
            return
        }
        switch code.primary {
        case .auth: self = .refused
        case .busy, .locked: self = .locked
        case .interrupt: self = .timeLimit
        case .cannotOpen, .notADatabase, .corrupt, .perm, .ioError, .readOnly, .notFound:
            self = .unavailable
        case .error, .misuse, .range, .schema, .mismatch, .tooBig:
            self = .badSQL
        default: self = .failure
        }
    }

    /// The status for a migration's statement that failed with `code`.
    ///
    /// The migration's `BEGIN IMMEDIATE` succeeded, so the database was
    /// open and writable: a plain `SQLITE_READONLY` then comes from the
    /// migration's own SQL (`PRAGMA query_only = 1`, a write to a database
    /// it attached read-only), a bad migration like any other. The extended
    /// read-only codes (the file moved away, a `-shm` that cannot be
    /// written) stay about the file.
    ///
    /// ```swift
    /// ExitStatus(failedMigrationStatementCode: .readOnly)   // .badSQL
    /// ExitStatus(failedMigrationStatementCode: .full)       // .writeFailed
    /// ```
    init(failedMigrationStatementCode code: ResultCode) {
        let status = ExitStatus(code: code)
        self = status == .failure || code == .readOnly ? .badSQL : status
    }

    /// One line of `--help` per code.
    static let helpText = """
        Exit codes:
          0   success, or watch, serve, demo and replicate stopped with Ctrl-C or SIGTERM
          64  bad command-line arguments
          65  bad SQL (syntax error, no such table, wrong --arg count, a value or result too big) or migrations
          66  the database is missing, unreadable, not a database or corrupt
          67  refused statement: watched, explained and served SQL may only read
          68  the query ran longer than --time-limit and was stopped
          69  serve cannot listen on its address (in use, not this machine's, not allowed)
          74  a write failed (disk full, file size limit, I/O error); rolled back
          75  the database is locked by another connection, or the slot to drop is in use; try again
          76  PostgreSQL: replicate stopped on a fatal replica error; slots cannot reach it, or it refused
          130 migrate or explain stopped by Ctrl-C, SIGTERM, SIGHUP (rolled back)
          1   any other error
        """
}

extension SQLiteError {
    /// Whether the authorizer refused the statement: code `.auth`, or the
    /// generic error SQLite gives for a denied function (`not authorized to
    /// use function: load_extension`).
    var isAuthorizerRefusal: Bool {
        code.primary == .auth || (code.primary == .error && message?.hasPrefix("not authorized") == true)
    }
}
