import DBWatchTestSupport
import Foundation
import Testing

@testable import DBWatch

@Suite("Migrations: concurrent migrators")
struct MigrationConcurrencyTests {
    /// Each migration also appends a row to `applied_log`: a migration
    /// applied twice would leave two rows (or fail on its CREATE TABLE).
    static let migrator: Migrator = {
        var migrations = [
            Migration(
                number: 1, name: "create_log",
                sql: """
                    CREATE TABLE applied_log (number INTEGER NOT NULL);
                    INSERT INTO applied_log (number) VALUES (1);
                    """)
        ]
        for number in 2...8 {
            migrations.append(
                Migration(
                    number: number, name: "table_\(number)",
                    sql: """
                        CREATE TABLE t\(number) (id INTEGER PRIMARY KEY, value TEXT);
                        INSERT INTO t\(number) (value) VALUES ('a;b');
                        INSERT INTO applied_log (number) VALUES (\(number));
                        """))
        }
        return try! Migrator(migrations: migrations)
    }()

    static let allNumbers = Array(1...8)

    private static func open(_ kind: DatabaseKind, _ path: String) throws -> any DatabaseWriter {
        try kind.open(at: path)
    }

    /// Checks that every migration was applied once and recorded once.
    private static func expectAppliedOnce(_ writer: some DatabaseWriter, applied: [[Migration]]) async throws {
        let numbers = applied.flatMap { $0.map(\.number) }.sorted()
        #expect(numbers == allNumbers, "each migration is applied by exactly one migrator")
        #expect(try await recordedMigrationNumbers(in: writer) == allNumbers)
        let log = try await writer.read { db in
            try db.fetchAll(Int.self, sql: "SELECT number FROM applied_log ORDER BY number")
        }
        #expect(log == allNumbers)
        #expect(try await migrator.status(of: writer).isUpToDate)
    }

    @Test(arguments: DatabaseKind.onFile)
    func twoConnectionsMigrateOneFileAtOnce(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            for round in 0..<5 {
                let path = directory.file("db-\(round).sqlite")
                let first = try Self.open(kind, path)
                let second = try Self.open(kind, path)
                let applied = try await withTimeout {
                    async let a = Self.migrator.migrate(first)
                    async let b = Self.migrator.migrate(second)
                    return try await [a, b]
                }
                try await Self.expectAppliedOnce(first, applied: applied)
                await first.close()
                await second.close()
            }
        }
    }

    /// Both migrators plan before either applies, so the second one's plan
    /// is stale: inside its transaction it must see what the first applied
    /// and skip it.
    @Test(arguments: DatabaseKind.onFile)
    func staleMigratorSkipsWhatTheOtherApplied(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let first = try Self.open(kind, path)
            let second = try Self.open(kind, path)
            try await withTimeout {
                let firstPlan = try await Self.migrator.dryRun(first)
                let secondPlan = try await Self.migrator.dryRun(second)
                #expect(firstPlan.map(\.number) == Self.allNumbers)
                #expect(secondPlan.map(\.number) == Self.allNumbers)

                // One after the other: the second applies nothing.
                let applied = try await Self.migrator.apply(firstPlan, to: first)
                let skipped = try await Self.migrator.apply(secondPlan, to: second)
                #expect(applied.map(\.number) == Self.allNumbers)
                #expect(skipped.isEmpty)
                try await Self.expectAppliedOnce(second, applied: [applied, skipped])
            }
            await first.close()
            await second.close()
        }
    }

    @Test(arguments: DatabaseKind.onFile)
    func stalePlansRacing(kind: DatabaseKind) async throws {
        try await withTemporaryDirectory { directory in
            for round in 0..<5 {
                let path = directory.file("db-\(round).sqlite")
                let first = try Self.open(kind, path)
                let second = try Self.open(kind, path)
                let applied = try await withTimeout {
                    let firstPlan = try await Self.migrator.dryRun(first)
                    let secondPlan = try await Self.migrator.dryRun(second)
                    async let a = Self.migrator.apply(firstPlan, to: first)
                    async let b = Self.migrator.apply(secondPlan, to: second)
                    return try await [a, b]
                }
                try await Self.expectAppliedOnce(first, applied: applied)
                await first.close()
                await second.close()
            }
        }
    }

    /// A migrator with fewer migrations than the database has applied stops
    /// at its in-transaction check, even when its plan was made earlier.
    @Test func olderMigratorStopsInsideTheTransaction() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let newer = try DatabaseQueue(path: path)
            let older = try DatabaseQueue(path: path)
            let olderMigrator = try Migrator(migrations: Array(Self.migrator.migrations.prefix(3)))
            try await withTimeout {
                let stalePlan = try await olderMigrator.dryRun(older)
                #expect(stalePlan.count == 3)
                try await Self.migrator.migrate(newer)
                let error = try await #require(throws: MigrationError.self) {
                    try await olderMigrator.apply(stalePlan, to: older)
                }
                guard error.code == .historyMismatch, error.changedMigrations.isEmpty else {
                    Issue.record("unexpected \(error)")
                    return
                }
                #expect(error.unknownMigrations.map(\.number) == Array(4...8))
            }
        }
    }
}
