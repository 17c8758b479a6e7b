@testable import DBWatch
import Testing

@testable import DBWatchDelivery

/// The one JSON shape of errors and the one table from errors to statuses.
@Suite("Error answers: one shape, one table of statuses")
struct ErrorAnswerTests {
    func text(_ answer: HTTPAnswer) -> String { String(decoding: answer.body, as: UTF8.self) }

    @Test func anErrorBodyIsAlwaysTheSameBytes() {
        // Kept alive, so that each encoding's storage is elsewhere (a
        // dictionary's order depends on it).
        let bodies = (0..<200).map { _ in ErrorBody(message: "datatype mismatch", code: 20).json }
        let texts = Set(bodies.map { String(decoding: $0, as: UTF8.self) })
        #expect(texts == [#"{"code":20,"message":"datatype mismatch"}"#])
    }

    @Test func liveQueryErrorsAnswerTheirStatusAndOnlyTheCapIsRetryable() {
        let forbidden = HTTPAnswer.error(LiveQueriesError.forbidden("not yours"), retryAfterSeconds: 3)
        #expect(forbidden.status == 403)
        #expect(text(forbidden) == #"{"message":"not yours"}"#)
        #expect(!forbidden.headers.contains { $0.name == "Retry-After" })
        let cap = HTTPAnswer.error(LiveQueriesError.tooManyObservations, retryAfterSeconds: 3)
        #expect(cap.status == 503)
        #expect(cap.headers.contains { $0.name == "Retry-After" && $0.value == "3" })
    }

    @Test func sqliteErrorsAnswerTheStatusOfTheirCode() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
            try db.execute(sql: "INSERT INTO t (name) VALUES ('a')")
        }
        let constraint = await #expect(throws: SQLiteError.self) {
            try await queue.write { db in try db.execute(sql: "INSERT INTO t (name) VALUES ('a')") }
        }
        let answer = HTTPAnswer.error(try #require(constraint), retryAfterSeconds: 1)
        #expect(answer.status == 409)
        #expect(text(answer).contains(#""code":2067"#), "the extended code, SQLITE_CONSTRAINT_UNIQUE: \(text(answer))")
        let syntax = await #expect(throws: SQLiteError.self) {
            try await queue.read { db in try db.execute(sql: "SELEC 1") }
        }
        #expect(HTTPAnswer.error(try #require(syntax), retryAfterSeconds: 1).status == 500)
        #expect(HTTPAnswer.error(SQLiteError.databaseClosed, retryAfterSeconds: 1).status == 503)
    }

    @Test func anyOtherErrorIsA500ThatSaysNothingOfIt() {
        struct Secret: Error {}
        let answer = HTTPAnswer.error(Secret(), retryAfterSeconds: 1)
        #expect(answer.status == 500)
        #expect(text(answer) == #"{"message":"internal error"}"#)
    }
}
