import DBWatch
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// A one-shot request answers the current value as JSON, and an error in
/// the one JSON shape, `{"message", "code"}`, with its status, whatever the
/// adapter.
@Suite("One-shot answers and the one JSON error shape, on every adapter")
struct OneShotTests {
    /// `GET /top?limit=1` answers the current value as JSON, and starts no
    /// observation.
    @Test(arguments: Adapter.available)
    func currentValueAsJSON(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let answer = try await fetch("\(server.baseURL)/top?limit=1")
                #expect(answer.status == 200)
                #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
                let players = try JSONDecoder().decode([Player].self, from: Data(answer.body.utf8))
                #expect(players == [Player(name: "arthur", score: 100)])
                #expect(server.database.observationCount == 0)
            }
        }
    }

    /// A bad parameter (a negative limit) is a 400 whose JSON body holds the
    /// message and no SQLite code.
    @Test(arguments: Adapter.available)
    func aBadParameterIs400WithAJSONBody(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let answer = try await fetch("\(server.baseURL)/top?limit=-1")
                #expect(answer.status == 400)
                #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
                #expect(answer.body == #"{"message":"limit must not be negative"}"#)
                let body = try JSONDecoder().decode(ErrorJSON.self, from: Data(answer.body.utf8))
                #expect(body == ErrorJSON(message: "limit must not be negative", code: nil))
            }
        }
    }

    /// A write that breaks a constraint is a 409 whose body carries the
    /// extended SQLite code.
    @Test(arguments: Adapter.available)
    func aConstraintIs409WithTheSQLiteCode(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let answer = try await fetch("\(server.baseURL)/players/arthur/1", method: "POST")
                #expect(answer.status == 409)
                #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
                let body = try JSONDecoder().decode(ErrorJSON.self, from: Data(answer.body.utf8))
                #expect(body.code == ResultCode.constraintPrimaryKey.rawValue)
            }
        }
    }

    /// A `LiveQueriesError` thrown from a route is answered with its status in
    /// the one shape, as JSON in UTF-8.
    @Test(arguments: Adapter.available)
    func aLiveQueriesErrorThrownFromARouteIsAnsweredInTheOneShape(adapter: Adapter) async throws {
        try await withTimeout {
            try await adapter.withServer { server in
                let answer = try await fetch("\(server.baseURL)/refused")
                #expect(answer.status == 403)
                #expect(answer.headers["content-type"] == "application/json; charset=utf-8")
                #expect(answer.body == #"{"message":"these are not your todos"}"#)
            }
        }
    }
}
