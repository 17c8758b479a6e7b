import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

/// Live observations on the database see the new schema: an observation
/// whose table was just created starts succeeding; one whose table was
/// dropped gets an error value in its `Result` form, never a hang.
@Suite("Migrations: live observations across a migration")
struct MigrationObservationTests {
    static let createLater = Migration(
        number: 1, name: "create_later",
        sql: """
            CREATE TABLE later (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            INSERT INTO later (name) VALUES ('first');
            """)
    static let dropLater = Migration(number: 2, name: "drop_later", sql: "DROP TABLE later;\n")
    static let recreateLater = Migration(
        number: 3, name: "recreate_later",
        sql: """
            CREATE TABLE later (id INTEGER PRIMARY KEY);
            INSERT INTO later (id) VALUES (1), (2);
            """)
    static let migrator = try! Migrator(migrations: [createLater, dropLater, recreateLater])

    static let countLater = IntRequest("SELECT count(*) FROM later")

    /// An in-memory queue, or a pool on a file of `directory`.
    private static func open(_ kind: DatabaseKind, in directory: TemporaryDirectory) throws -> any DatabaseWriter {
        try kind.open(in: directory)
    }

    /// Whether `result` is the error of a query on the missing table `later`.
    private static func isNoSuchTableLater(_ result: Result<Int, any Error>) -> Bool {
        guard case .failure(let error as SQLiteError) = result else { return false }
        return error.message == "no such table: later"
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func observationOfACreatedTableStartsSucceeding(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let writer = try Self.open(kind, in: directory)
            let (recorder, task) = record(writer.observe(Self.countLater))
            defer { task.cancel() }

            // Before the migration, the table does not exist.
            try await recorder.wait(forCount: 1)
            #expect(Self.isNoSuchTableLater(recorder.values[0]), "\(recorder.values)")

            #expect(try await Self.migrator.migrate(writer, upTo: 1) == [Self.createLater])
            try await recorder.wait { $0.last?.value == 1 }
            let values = recorder.values
            #expect(values.allSatisfy { $0.value == 1 || Self.isNoSuchTableLater($0) }, "\(values)")

            // It keeps observing the new table.
            try await writer.write { db in try db.execute(sql: "INSERT INTO later (name) VALUES ('second')") }
            try await recorder.wait { $0.last?.value == 2 }
            await writer.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func observationOfADroppedTableGetsAnErrorValue(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let writer = try Self.open(kind, in: directory)
            try await Self.migrator.migrate(writer, upTo: 1)
            let (recorder, task) = record(writer.observe(Self.countLater))
            defer { task.cancel() }
            try await recorder.wait { $0.last?.value == 1 }

            #expect(try await Self.migrator.migrate(writer, upTo: 2) == [Self.dropLater])
            try await recorder.wait { $0.last.map(Self.isNoSuchTableLater) == true }
            let values = recorder.values
            #expect(values.first?.value == 1, "\(values)")

            // The `Result` form keeps observing: a table of that name again, and it recovers.
            #expect(try await Self.migrator.migrate(writer) == [Self.recreateLater])
            try await recorder.wait { $0.last?.value == 2 }
            await writer.close()
        }
    }

    @Test(arguments: DatabaseKind.queueAndPool)
    func throwingObservationEndsWithAnErrorAfterTheDrop(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let writer = try Self.open(kind, in: directory)
            try await Self.migrator.migrate(writer, upTo: 1)
            let counts = ValueRecorder<Int>()
            let task = Task { () -> (any Error)? in
                do {
                    for try await count in writer.observe(Self.countLater) { counts.append(count) }
                    return nil
                } catch {
                    return error
                }
            }
            defer { task.cancel() }
            try await counts.wait { $0 == [1] }

            #expect(try await Self.migrator.migrate(writer, upTo: 2) == [Self.dropLater])
            let error = try await withTimeout { await task.value }
            #expect(Self.isNoSuchTableLater(.failure(try #require(error, "the sequence ended without an error"))))
            #expect(counts.values == [1])
            await writer.close()
        }
    }
}
