import DBWatch
@testable import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Hummingbird
import Testing

@Suite("One-shot answers and status codes")
struct OneShotTests {
    @Test func currentValueAsJSON() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let answer = try await fetch("\(server.baseURL)/top?limit=1")
                #expect(answer.status == 200)
                #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
                let players = try JSONDecoder().decode([Player].self, from: Data(answer.body.utf8))
                #expect(players == [Player(name: "arthur", score: 100)])
                #expect(server.database.observationCount == 0)
            }
        }
    }

    @Test func badParametersAre400WithAJSONBody() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let answer = try await fetch("\(server.baseURL)/top?limit=-1")
                #expect(answer.status == 400)
                let body = try JSONDecoder().decode(ErrorJSON.self, from: Data(answer.body.utf8))
                #expect(body == ErrorJSON(message: "limit must not be negative", code: nil))
            }
        }
    }

    @Test func constraintIs409WithTheSQLiteCode() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let answer = try await fetch("\(server.baseURL)/players/arthur/1", method: "POST")
                #expect(answer.status == 409)
                let body = try JSONDecoder().decode(ErrorJSON.self, from: Data(answer.body.utf8))
                #expect(body.code == ResultCode.constraintPrimaryKey.rawValue)
            }
        }
    }

    @Test func errorStatuses() async throws {
        try await withTimeout {
            try await LiveServer.with { server in
                let logger = server.live.logger
                let busy = server.live.errorResponse(
                    SQLiteError(code: .busy, message: "database is locked"), logger: logger)
                #expect(busy.status == .serviceUnavailable)
                #expect(busy.headers[.retryAfter] == "1")
                let locked = server.live.errorResponse(SQLiteError(code: ResultCode(rawValue: 262)), logger: logger)
                #expect(locked.status == .serviceUnavailable)
                #expect(server.live.errorResponse(SQLiteError(code: .full), logger: logger).status.code == 507)
                #expect(
                    server.live.errorResponse(LiveQueryError.shuttingDown, logger: logger).status == .serviceUnavailable
                )
                #expect(
                    server.live.errorResponse(SQLiteError(code: .corrupt), logger: logger).status
                        == .internalServerError)
                // A parameter's value that the SQL cannot take (`LIMIT 'abc'`) is the client's.
                #expect(
                    server.live.errorResponse(
                        SQLiteError(code: .mismatch, message: "datatype mismatch"), logger: logger
                    )
                    .status == .badRequest)
            }
        }
    }
}
