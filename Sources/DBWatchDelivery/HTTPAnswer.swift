import DBWatch
import Logging

/// An HTTP answer as the engine decides it, for an adapter to turn into its
/// framework's response: a status, headers and a body.
package struct HTTPAnswer: Sendable {
    /// The status code.
    package var status: Int
    /// Header fields, in order.
    package var headers: [(name: String, value: String)]
    /// The body.
    package var body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The content type of JSON answers.
    package static let jsonContentType = "application/json; charset=utf-8"

    /// A JSON answer.
    package static func json(_ body: [UInt8], status: Int = 200) -> HTTPAnswer {
        HTTPAnswer(status: status, headers: [("Content-Type", jsonContentType)], body: body)
    }

    /// An error answer in the one shape, `{"message": …}`.
    package static func error(status: Int, message: String) -> HTTPAnswer {
        json(ErrorBody(message: message).json, status: status)
    }

    /// The answer to `error`, with its status, from the one table of
    /// <doc:ErrorAnswers>:
    ///
    /// | error | status |
    /// | --- | --- |
    /// | ``LiveQueriesError`` | its ``LiveQueriesError/httpStatus`` (503s it says are retryable with `Retry-After`) |
    /// | a request that does not decode (`DecodingError`) | 400 |
    /// | SQLite: datatype mismatch (a parameter the SQL cannot take) | 400 |
    /// | SQLite: constraint violated | 409 |
    /// | SQLite: busy or locked | 503 with `Retry-After` |
    /// | SQLite: database closed; the file replaced | 503 |
    /// | SQLite: disk full | 507 |
    /// | any other SQLite error | 500 |
    /// | any other error | 500, `internal error` (its text is logged, not sent) |
    package static func error(_ error: any Error, retryAfterSeconds: Int) -> HTTPAnswer {
        var retry = false
        var body = ErrorBody(error)
        let status: Int
        if let error = error as? LiveQueriesError {
            status = error.httpStatus
            retry = error.isRetryable
        } else if error is DecodingError {
            status = 400
        } else if error is DatabaseFileReplacedError {
            status = 503
        } else if let error = error as? SQLiteError {
            if error.isDatabaseClosed {
                status = 503
            } else if error.isBusyOrLocked {
                status = 503
                retry = true
            } else if error.isConstraintViolation {
                status = 409
            } else if error.primaryCode == .mismatch {
                // A value of the request's parameters that the SQL cannot
                // take (`LIMIT 'abc'`): the client's, like a decoding error.
                status = 400
            } else if error.isDiskFull {
                status = 507
            } else {
                status = 500
            }
        } else {
            status = 500
            body = ErrorBody(message: "internal error")
        }
        var answer = json(body.json, status: status)
        if retry { answer.headers.append(("Retry-After", "\(retryAfterSeconds)")) }
        return answer
    }
}
