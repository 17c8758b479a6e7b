#if Vapor
    import DBWatch
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    @testable import DBWatchVapor
    import Foundation
    import Testing
    import Vapor

    /// Vapor's own errors and the status of each error answer (the answers
    /// shared with Hummingbird's adapter are `DBWatchAdapterTests.OneShotTests`).
    @Suite("Vapor: its own errors and the status of each error answer")
    struct OneShotTests {
        /// Vapor's own refusals (no route: 404; a route parameter that is
        /// not a number: 422) take the one JSON shape, without a code.
        @Test func vaporsOwnErrorsTakeTheOneShape() async throws {
            try await withTimeout {
                try await VaporServer.with { server in
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

        /// Busy and locked databases are 503 with `Retry-After`, a full disk
        /// 507, shutdown 503, refusals their status, corruption 500, a
        /// datatype mismatch 400, an `Abort` its status and fields, any
        /// other error a 500 whose text stays in the log.
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
            #expect(answer(LiveQueriesError.shuttingDown).status == .serviceUnavailable)
            #expect(answer(LiveQueriesError.forbidden("not yours")).status == .forbidden)
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

        /// A `LiveQueriesError` is an `AbortError` with its status and message,
        /// for Vapor's own error middleware.
        @Test func aLiveQueriesErrorKeepsItsStatusUnderVaporsErrorMiddleware() {
            let error: any AbortError = LiveQueriesError.forbidden("these are not your todos")
            #expect(error.status == .forbidden)
            #expect(error.reason == "these are not your todos")
        }
    }
#endif
