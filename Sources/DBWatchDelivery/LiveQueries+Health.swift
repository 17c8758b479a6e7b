import DBWatch

extension HTTPAnswer {
    /// The answer of `/healthz`: 200 `{"status":"ok"}` as long as the
    /// process answers at all (a liveness check: nothing is read).
    package static var health: HTTPAnswer {
        .json(Array(#"{"status":"ok"}"#.utf8))
    }

    /// The answer of `/readyz`: 200 `{"status":"ready"}` when `notReady` is
    /// `nil` and `database` answers a read of its schema, else 503 with the
    /// reason in the one error shape.
    package static func readiness(of database: any DatabaseWriter, notReady: String?) async -> HTTPAnswer {
        if let notReady { return .error(status: 503, message: "not ready: \(notReady)") }
        do {
            // Reads the file's schema: a closed, replaced or unreadable file fails.
            _ = try await database.read { db in try db.fetchOne(sql: "SELECT count(*) FROM sqlite_schema") != nil }
        } catch {
            return .error(status: 503, message: "not ready: the database cannot be read (\(error))")
        }
        return .json(Array(#"{"status":"ready"}"#.utf8))
    }
}

extension LiveQueries {
    /// The answer of `/readyz` for these live queries: unready while they
    /// refuse clients (shutdown, database closed or replaced), when the
    /// database cannot be read, or when `condition` gives a reason (a
    /// replica's lag).
    package func readinessAnswer(condition: @Sendable () -> String? = { nil }) async -> HTTPAnswer {
        await .readiness(of: database, notReady: refusal()?.message ?? condition())
    }
}
