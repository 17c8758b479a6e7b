import DBWatch
import Logging

extension LiveQueries {
    /// The current value of `request` as a JSON answer, or the error answer
    /// with its status (see ``HTTPAnswer/error(_:retryAfterSeconds:)``).
    package func currentAnswer<R: Queryable>(
        _ request: R, logger: Logger, encode: @Sendable (R.Value) throws -> [UInt8]
    ) async -> HTTPAnswer {
        do {
            if let refusal = refusal() { throw refusal }
            // A connection opened before the file was replaced or deleted
            // still reads the old file: its value is not the database's.
            // (One stat per answer; streams learn it from their observation.)
            let (value, moved) = try await database.read { db in (try request.fetch(db), db.mainFileHasMoved) }
            counters.fetches.add(1, ordering: .relaxed)
            if moved {
                state.withLock { $0.databaseReplaced = true }
                throw LiveQueriesError.databaseReplaced
            }
            return .json(try encode(value))
        } catch {
            return errorAnswer(error, request: request, logger: logger)
        }
    }

    /// The error answer to `error`, logged: at warning level for a server
    /// error (5xx), at debug level for a refusal.
    package func errorAnswer(_ error: any Error, request: (any Sendable)? = nil, logger: Logger) -> HTTPAnswer {
        let answer = HTTPAnswer.error(error, retryAfterSeconds: configuration.retryAfterSeconds)
        let described = request.map { "\($0)" } ?? "-"
        if answer.status >= 500 {
            logger.warning(
                "Live query failed",
                metadata: [LogKey.request: "\(described)", LogKey.status: "\(answer.status)", LogKey.error: "\(error)"])
        } else {
            logger.debug(
                "Live query request refused",
                metadata: [LogKey.request: "\(described)", LogKey.status: "\(answer.status)", LogKey.error: "\(error)"])
        }
        return answer
    }
}
