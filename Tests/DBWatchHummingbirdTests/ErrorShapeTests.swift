import DBWatch
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// One server, one JSON shape of errors: thrown `LiveQueryError`s, and with
/// `LiveQueriesErrorMiddleware`, Hummingbird's errors and any other.
@Suite("Error answers in one JSON shape")
struct ErrorShapeTests {
    @Test func aLiveQueryErrorThrownFromARouteIsAnsweredInTheOneShape() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let answer = try await fetch("\(server.baseURL)/refused")
                #expect(answer.status == 403)
                #expect(answer.headers["content-type"] == "application/json; charset=utf-8")
                #expect(answer.body == #"{"message":"these are not your todos"}"#)
            }
        }
    }

    @Test func theMiddlewareAnswersHummingbirdsErrorsWithTheirStatusAndFields() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
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
