import DBWatch
import Foundation

/// The one JSON shape of every error a client of live queries receives: an
/// HTTP error answer, an `error` event, a WebSocket error message.
///
/// `{"message": "database is locked", "code": 5}`: `message` says what went
/// wrong without the SQL or bound values; `code`, present only when SQLite
/// reported the error, is its extended result code.
package struct ErrorBody: Encodable, Sendable, Equatable {
    /// What went wrong, without the SQL or bound values.
    package var message: String
    /// The SQLite extended result code, when SQLite reported the error.
    package var code: Int32?

    package init(message: String, code: Int32? = nil) {
        self.message = message
        self.code = code
    }

    /// What a client is told of `error`.
    package init(_ error: any Error) {
        if let error = error as? SQLiteError {
            self.init(message: error.message ?? "\(error.code)", code: error.code.rawValue)
        } else if error is DatabaseFileReplacedError {
            // Not the error's description: it holds the server's path.
            self.init(message: LiveQueriesError.databaseReplaced.message)
        } else if let error = error as? LiveQueriesError {
            self.init(message: error.message)
        } else if let error = error as? DecodingError {
            self.init(message: "invalid request parameters: \(Self.describe(error))")
        } else {
            self.init(message: "\(error)")
        }
    }

    /// A client's request that was refused: a ``LiveQueriesError``'s message,
    /// what does not decode, or, for any other error (which may hold the
    /// server's details), only that it was refused.
    package init(refusal error: any Error) {
        if error is LiveQueriesError || error is DecodingError {
            self.init(error)
        } else {
            self.init(message: "the request was refused")
        }
    }

    /// What is wrong with a request that does not decode, in a few words:
    /// `missing limit`, `limit has the wrong type`, `not JSON`.
    package static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            let path = keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return path.isEmpty ? "the message" : String(path.prefix(100))
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing \(path(context.codingPath + [key]))"
        case .typeMismatch(_, let context): return "\(path(context.codingPath)) has the wrong type"
        case .valueNotFound(_, let context): return "\(path(context.codingPath)) is null"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not JSON" : "\(path(context.codingPath)) is invalid"
        @unknown default: return "does not decode"
        }
    }

    /// `{"code":…,"message":…}`, its keys sorted: equal errors are equal
    /// bytes (a plain encoder's order changes from one encoding to the next).
    package var json: [UInt8] {
        // Encoding two plain fields cannot fail.
        (try? LiveQueries.encodeJSON(self)) ?? Array(#"{"message":"error"}"#.utf8)
    }
}
