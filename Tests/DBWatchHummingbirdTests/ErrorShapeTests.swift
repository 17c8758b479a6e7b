import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// One server, one JSON shape of errors: with `LiveQueriesErrorMiddleware`,
/// Hummingbird's errors and any other (a thrown `LiveQueriesError`, on every
/// adapter, is `DBWatchAdapterTests.OneShotTests`).
@Suite("Error answers in one JSON shape")
struct ErrorShapeTests {
    /// Behind the middleware, an `HTTPError` keeps its status, message and
    /// fields, a SQLite error gets its status and code, and any other error
    /// is a 500 whose text stays in the log.
    @Test func theMiddlewareAnswersHummingbirdsErrorsWithTheirStatusAndFields() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let missing = try await fetch("\(server.baseURL)/errors/missing")
                #expect(missing.status == 404)
                #expect(missing.body == #"{"message":"no such player"}"#)
                #expect(missing.headers["allow"] == "GET")
                let locked = try await fetch("\(server.baseURL)/errors/locked")
                #expect(locked.status == 503)
                #expect(locked.headers["retry-after"] == "1")
                #expect(locked.body == #"{"code":5,"message":"database is locked"}"#)
                let other = try await fetch("\(server.baseURL)/errors/internal")
                #expect(other.status == 500)
                #expect(other.body == #"{"message":"internal error"}"#, "the error's text stays in the log")
            }
        }
    }
}
