import DBWatch
@testable import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Hummingbird
import Testing

/// The statuses `errorResponse(_:logger:)` gives each kind of error (the
/// answers on a live server, shared with Vapor's adapter, are
/// `DBWatchAdapterTests.OneShotTests`).
@Suite("Hummingbird: the status of each error answer")
struct OneShotTests {
    /// Busy and locked databases are 503 with `Retry-After`, a full disk
    /// 507, shutdown 503, corruption 500, a datatype mismatch 400.
    @Test func errorStatuses() async throws {
        try await withTimeout {
            try await HummingbirdServer.with { server in
                let logger = server.live.logger
                let busy = server.live.errorResponse(
                    SQLiteError(code: .busy, message: "database is locked"), logger: logger)
                #expect(busy.status == .serviceUnavailable)
                #expect(busy.headers[.retryAfter] == "1")
                let locked = server.live.errorResponse(SQLiteError(code: ResultCode(rawValue: 262)), logger: logger)
                #expect(locked.status == .serviceUnavailable)
                #expect(server.live.errorResponse(SQLiteError(code: .full), logger: logger).status.code == 507)
                let shuttingDown = server.live.errorResponse(LiveQueriesError.shuttingDown, logger: logger)
                #expect(shuttingDown.status == .serviceUnavailable)
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
