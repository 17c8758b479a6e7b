#if Vapor
    import DBWatch
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    @testable import DBWatchVapor
    import Foundation
    import Testing
    import Vapor

    @Suite("Vapor: one-shot answers and the one JSON error shape")
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

        @Test func aThrownLiveQueryErrorIsItsStatusWithAJSONBody() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    let answer = try await fetch("\(server.baseURL)/top?limit=-1")
                    #expect(answer.status == 400)
                    #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
                    #expect(answer.body == #"{"message":"limit must not be negative"}"#)
                }
            }
        }

        @Test func aThrownConstraintErrorIs409WithTheSQLiteCode() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    let answer = try await fetch("\(server.baseURL)/players/arthur/1", method: "POST")
                    #expect(answer.status == 409)
                    let body = try JSONDecoder().decode(ErrorJSON.self, from: Data(answer.body.utf8))
                    #expect(body.code == ResultCode.constraintPrimaryKey.rawValue)
                }
            }
        }

        @Test func vaporsOwnErrorsTakeTheOneShape() async throws {
            try await withTimeout {
                try await LiveServer.with { server in
                    let missing = try await fetch("\(server.baseURL)/nowhere")
                    #expect(missing.status == 404)
                    #expect(missing.body == #"{"message":"Not Found"}"#)
                    // A route parameter that is not a number: Vapor's own refusal (422).
                    let notANumber = try await fetch("\(server.baseURL)/players/carol/many", method: "POST")
                    #expect(notANumber.status == 422)
                    #expect(try JSONDecoder().decode(ErrorJSON.self, from: Data(notANumber.body.utf8)).code == nil)
                }
            }
        }

        @Test func errorStatuses() async throws {
            let live = LiveQueries(try DatabaseQueue())
            let app = try await Application.make(.testing)
            let request = Request(application: app, on: app.eventLoopGroup.next())
            func answer(_ error: any Error) -> Response { live.errorResponse(error, for: request) }
            let busy = answer(SQLiteError(code: .busy, message: "database is locked"))
            #expect(busy.status == .serviceUnavailable)
            #expect(busy.headers.first(name: "Retry-After") == "1")
            #expect(busy.body.string == #"{"code":5,"message":"database is locked"}"#)
            #expect(answer(SQLiteError(code: ResultCode(rawValue: 262))).status == .serviceUnavailable)
            #expect(answer(SQLiteError(code: .full)).status.code == 507)
            #expect(answer(LiveQueryError.shuttingDown).status == .serviceUnavailable)
            #expect(answer(LiveQueryError.forbidden("not yours")).status == .forbidden)
            #expect(answer(SQLiteError(code: .corrupt)).status == .internalServerError)
            #expect(answer(SQLiteError(code: .mismatch, message: "datatype mismatch")).status == .badRequest)
            let abort = answer(Abort(.unauthorized, headers: ["WWW-Authenticate": "Bearer"], reason: "who are you"))
            #expect(abort.status == .unauthorized)
            #expect(abort.headers.first(name: "WWW-Authenticate") == "Bearer")
            #expect(abort.body.string == #"{"message":"who are you"}"#)
            // Any other error: its text stays in the server's log.
            struct Secret: Error {}
            let other = answer(Secret())
            #expect(other.status == .internalServerError)
            #expect(other.body.string == #"{"message":"internal error"}"#)
            try await app.asyncShutdown()
            await live.database.close()
        }

        @Test func aLiveQueryErrorKeepsItsStatusUnderVaporsErrorMiddleware() {
            let error: any AbortError = LiveQueryError.forbidden("these are not your todos")
            #expect(error.status == .forbidden)
            #expect(error.reason == "these are not your todos")
        }
    }
#endif
