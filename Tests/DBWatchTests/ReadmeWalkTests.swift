import DBWatch
import Foundation
import Testing

/// Claims of README.md that no other test pins: the documented defaults, and
/// migrations from files and the same text in code continuing each other's
/// databases.
@Suite("README walk")
struct ReadmeWalkTests {
    /// README, "Access": `busyTimeout` (5 s), `foreignKeysEnabled` (on),
    /// `maximumReaderCount` (4), `allowsURIFilenames` (off),
    /// `writesOnCallerThread` (on), external change detection off by default
    /// and polling every second; "Untrusted SQL": `maximumValueLength`
    /// (default 1 MB) and `maximumResultSize` (default 100 MB).
    @Test func documentedDefaults() {
        let configuration = Configuration()
        #expect(configuration.readOnly == false)
        #expect(configuration.busyTimeout == .seconds(5))
        #expect(configuration.foreignKeysEnabled)
        #expect(configuration.maximumReaderCount == 4)
        #expect(configuration.allowsURIFilenames == false)
        #expect(configuration.writesOnCallerThread)
        #expect(configuration.externalChangeDetection == nil)
        let detection = ExternalChangeDetection()
        #expect(detection.pollInterval == .seconds(1))
        #expect(detection.usesFileNotifications)
        #expect(ExternalChangeDetection.minimumPollInterval == .milliseconds(10))
        #expect(UntrustedSQLPolicy().timeLimit == .seconds(5))
        #expect(UntrustedSQLPolicy().maximumValueLength == 1_000_000)
        #expect(UntrustedSQLPolicy().maximumResultSize == 100_000_000)
    }

    /// README, "Migrations": "A migration from a file and the same text in
    /// code have the same checksum, so either can continue a database the
    /// other started", and "Renaming only the description is harmless".
    @Test func fileAndCodeMigratorsContinueEachOther() async throws {
        try await withTimeout {
            try await withTemporaryDirectory { directory in
                let first = "CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"
                let second = "ALTER TABLE player ADD COLUMN team TEXT;"
                let third = "CREATE INDEX player_on_team ON player(team);"
                let folder = directory.file("Migrations")
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                try first.write(toFile: folder + "/0001_create_player.sql", atomically: true, encoding: .utf8)
                try second.write(toFile: folder + "/0002_add_player_team.sql", atomically: true, encoding: .utf8)
                try third.write(toFile: folder + "/0003_index_team.sql", atomically: true, encoding: .utf8)
                let fromFiles = try Migrator(directory: folder)
                let inCode = try Migrator(migrations: [
                    Migration(number: 1, name: "make_player", sql: first),  // renamed description
                    Migration(number: 2, name: "add_player_team", sql: second),
                    Migration(number: 3, name: "index_team", sql: third),
                ])
                let queue = try DatabaseQueue(path: directory.file("db.sqlite"))
                defer { queue.close() }

                #expect(try await fromFiles.migrate(queue, upTo: 1).map(\.number) == [1])
                #expect(try await inCode.migrate(queue, upTo: 2).map(\.number) == [2])
                #expect(try await fromFiles.migrate(queue).map(\.number) == [3])

                for migrator in [fromFiles, inCode] {
                    let status = try await migrator.status(of: queue)
                    #expect(status.isUpToDate)
                    #expect(status.applied.map(\.number) == [1, 2, 3])
                    #expect(try await migrator.migrate(queue).isEmpty)
                }
            }
        }
    }
}
