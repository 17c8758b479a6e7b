#if Vapor
    import DBWatch
    import DBWatchServerTestSupport
    import DBWatchTestSupport
    @testable import DBWatchVapor
    import Foundation
    import Testing
    import Vapor

    /// What only Vapor's adapter does with a stream's lifetime: its order of
    /// shutdown among Vapor's lifecycle handlers (what every adapter does is
    /// `DBWatchAdapterTests.LifetimeTests`).
    @Suite("Vapor: the live queries shut down before the HTTP server")
    struct LifetimeTests {
        /// Vapor shuts the live queries down before its HTTP server: the
        /// streams end and the database closes while the server still
        /// answers, new streams and one-shot requests with a 503.
        @Test func theLiveQueriesStopBeforeVaporsServerAndRefuseNewClientsMeanwhile() async throws {
            let held = HeldShutdown()
            try await withTimeout {
                try await VaporServer.with(shutdownAfterLiveQueries: held) { server in
                    let stream = try await EventStream.open("\(server.baseURL)/top/events")
                    _ = try await stream.nextEvent()
                    async let shutdown: Void = server.shutDown()
                    // Vapor shuts its lifecycle handlers down before its HTTP
                    // server: the streams have ended and the database is
                    // closed while the server still answers.
                    #expect(try await stream.nextEvent().event == "end")
                    await held.reached.wait()
                    let refused = try await EventStream.open("\(server.baseURL)/top/events")
                    #expect(refused.status == 503)
                    #expect(try await refused.remainingBody() == #"{"message":"the server is shutting down"}"#)
                    let current = try await fetch("\(server.baseURL)/top")
                    #expect(current.status == 503)
                    await #expect(throws: SQLiteError.self) {
                        try await server.database.read { db in try db.fetchOne(Int.self, sql: "SELECT 1") }
                    }
                    held.release.open()
                    try await shutdown
                }
            }
        }
    }

    /// A lifecycle handler whose shutdown says it began and waits to be
    /// released: shut down after the live queries, it holds Vapor's HTTP
    /// server answering meanwhile.
    struct HeldShutdown: LifecycleHandler {
        let reached = Gate()
        let release = Gate()

        func shutdownAsync(_ application: Application) async {
            reached.open()
            await release.wait()
        }
    }
#endif
