import DBWatch
import DBWatchTestSupport
import Foundation
import Testing

@Suite("Migrations: loading files and lists")
struct MigrationLoadingTests {
    @Test func loadsSQLFilesInNumberOrderAndIgnoresOthers() async throws {
        try await withTemporaryDirectory { directory in
            let path = try directory.migrationDirectory([
                "00002_add_score.sql": "ALTER TABLE player ADD COLUMN score INTEGER;\n",
                "0001_create_player.sql": "CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT);\n",
                "0003_add-team.sql": "ALTER TABLE player ADD COLUMN team TEXT;\n",
                "README.md": "not a migration",
                ".0004_hidden.sql": "hidden files are ignored",
                "0005_notes.sql.bak": "other extensions are ignored",
            ])
            try FileManager.default.createDirectory(
                atPath: path + "/0006_folder.sql", withIntermediateDirectories: true)
            let migrator = try Migrator(directory: path)
            #expect(migrator.migrations.map(\.number) == [1, 2, 3])
            #expect(migrator.migrations.map(\.name) == ["create_player", "add_score", "add-team"])
            #expect(
                migrator.migrations.map(\.fileName) == [
                    "0001_create_player.sql", "00002_add_score.sql", "0003_add-team.sql",
                ])
            #expect(migrator.migrations[0].sql == "CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT);\n")
        }
    }

    @Test func checksumIsTheSHA256OfTheFileBytes() async throws {
        try await withTemporaryDirectory { directory in
            // Windows line endings and non-ASCII text are hashed as they are.
            let text = "-- héllo\r\nCREATE TABLE a (x);\r\n"
            let path = try directory.migrationDirectory(["0001_a.sql": text])
            let migration = try #require(try Migrator(directory: path).migrations.first)
            // printf -- '-- h\xc3\xa9llo\r\nCREATE TABLE a (x);\r\n' | sha256sum
            #expect(migration.checksum == Self.expectedChecksum)
            // The same text carried in code has the same checksum.
            #expect(Migration(number: 1, name: "a", sql: text).checksum == migration.checksum)
        }
    }

    static let expectedChecksum = "fb45165c939f0c7ece17e0980df6bfaa05d6da97d9c07b32230da930fcdb1f1f"

    @Test(arguments: [
        "1_short.sql", "001_three_digits.sql", "0001.sql", "0001_.sql", "0001-dash.sql", "0001_with space.sql",
        "0000_zero.sql", "abcd_letters.sql", "0001_upper.SQL", "0001_dots.v2.sql", "_0001_x.sql",
    ])
    func rejectsNamesOutsideTheConvention(fileName: String) async throws {
        try await withTemporaryDirectory { directory in
            let path = try directory.migrationDirectory([fileName: "SELECT 1;", "0001_ok.sql": "SELECT 1;"])
            #expect {
                try Migrator(directory: path)
            } throws: { error in
                guard let error = error as? MigrationError, error.code == .invalidFileName else { return false }
                return error.fileName == fileName
            }
        }
    }

    @Test func rejectsDuplicateNumbers() async throws {
        try await withTemporaryDirectory { directory in
            let path = try directory.migrationDirectory([
                "0001_a.sql": "SELECT 1;", "0002_b.sql": "SELECT 1;", "00002_c.sql": "SELECT 1;",
            ])
            let error = try #require(throws: MigrationError.self) { try Migrator(directory: path) }
            guard error.code == .duplicateNumber else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(error.number == 2)
            #expect(error.fileNames == ["00002_c.sql", "0002_b.sql"])
            #expect(error.description.contains("0002_b.sql"))
        }
    }

    @Test(arguments: [
        ([1, 2, 4], 3...3, "0004_m.sql"),
        ([2, 3], 1...1, "0002_m.sql"),
        ([1, 5, 6], 2...4, "0005_m.sql"),
    ])
    func rejectsGaps(numbers: [Int], missing: ClosedRange<Int>, next: String) async throws {
        let migrations = numbers.map { Migration(number: $0, name: "m", sql: "SELECT 1;") }
        let error = try #require(throws: MigrationError.self) { try Migrator(migrations: migrations) }
        guard error.code == .gap else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(error.missingNumbers == missing)
        #expect(error.fileName == next)
        #expect(error.description.contains(next))
    }

    @Test func gapsInADirectoryAreReportedToo() async throws {
        try await withTemporaryDirectory { directory in
            let path = try directory.migrationDirectory(["0001_a.sql": "SELECT 1;", "0003_c.sql": "SELECT 1;"])
            #expect {
                try Migrator(directory: path)
            } throws: { error in
                guard let error = error as? MigrationError, error.code == .gap else { return false }
                return error.missingNumbers == 2...2 && error.fileName == "0003_c.sql"
            }
        }
    }

    @Test func missingDirectoryAndUnreadableFiles() async throws {
        try await withTemporaryDirectory { directory in
            #expect {
                try Migrator(directory: directory.file("nowhere"))
            } throws: { error in
                guard let error = error as? MigrationError, error.code == .unreadable else { return false }
                return error.path == directory.file("nowhere")
            }
            let path = try directory.migrationDirectory([:], named: "latin1")
            try Data([0x53, 0x45, 0x4C, 0x45, 0x43, 0x54, 0x20, 0x27, 0xE9, 0x27, 0x3B])  // SELECT 'é'; in Latin-1
                .write(to: URL(fileURLWithPath: path + "/0001_latin1.sql"))
            #expect {
                try Migrator(directory: path)
            } throws: { error in
                guard let error = error as? MigrationError, error.code == .invalidEncoding else { return false }
                return error.path?.hasSuffix("0001_latin1.sql") == true
            }
            // Without read permission (root reads everything, so only as another user).
            if getuid() != 0 {
                let locked = try directory.migrationDirectory(["0001_a.sql": "SELECT 1;"], named: "locked")
                try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: locked + "/0001_a.sql")
                #expect {
                    try Migrator(directory: locked)
                } throws: { error in
                    guard let error = error as? MigrationError, error.code == .unreadable else { return false }
                    return error.reason == "Permission denied"
                }
            }
        }
    }

    /// A `.sql` name that is a FIFO or a link to a device is not read: the
    /// FIFO would block the open until a writer comes, `/dev/zero` never ends.
    @Test func aFIFOOrADeviceIsUnreadableNotReadForever() async throws {
        try await withTemporaryDirectory { directory in
            let fifo = try directory.migrationDirectory(["0001_a.sql": "SELECT 1;"], named: "fifo")
            #expect(mkfifo(fifo + "/0002_fifo.sql", 0o644) == 0)
            defer {
                // Releases an open that blocked (before the fix), so that no thread stays stuck.
                let writer = open(fifo + "/0002_fifo.sql", O_WRONLY | O_NONBLOCK)
                if writer >= 0 { close(writer) }
            }
            let device = try directory.migrationDirectory(["0001_a.sql": "SELECT 1;"], named: "device")
            try FileManager.default.createSymbolicLink(
                atPath: device + "/0002_zero.sql", withDestinationPath: "/dev/zero")
            for (path, name) in [(fifo, "0002_fifo.sql"), (device, "0002_zero.sql")] {
                let outcome = try await withTimeout { () -> MigrationError? in
                    do {
                        _ = try Migrator(directory: path)
                        return nil
                    } catch let error as MigrationError {
                        return error
                    }
                }
                guard let outcome, outcome.code == .unreadable else {
                    Issue.record("\(name): \(String(describing: outcome))")
                    continue
                }
                #expect(outcome.path == path + "/" + name)
                #expect(outcome.reason == "not a regular file")
            }
        }
    }

    @Test func emptyDirectoryHasNoMigrations() async throws {
        try await withTemporaryDirectory { directory in
            let migrator = try Migrator(directory: try directory.migrationDirectory([:]))
            #expect(migrator.migrations.isEmpty)
            let queue = try DatabaseQueue()
            #expect(try await migrator.migrate(queue).isEmpty)
            #expect(try await migrator.status(of: queue).isUpToDate)
            #expect(try await recordedMigrationNumbers(in: queue).isEmpty)
        }
    }

    @Test func inCodeMigrationsAreSortedAndChecked() throws {
        let migrator = try Migrator(migrations: [
            Migration(number: 2, name: "second", sql: "SELECT 2;"),
            Migration(number: 1, name: "first", sql: "SELECT 1;"),
        ])
        #expect(migrator.migrations.map(\.fileName) == ["0001_first.sql", "0002_second.sql"])
        #expect(migrator.migrations.map(\.description) == ["0001_first.sql", "0002_second.sql"])
        #expect(Migration(number: 12345, name: "big", sql: "").fileName == "12345_big.sql")

        #expect {
            try Migrator(migrations: [Migration(number: 0, name: "zero", sql: "")])
        } throws: { error in
            guard let error = error as? MigrationError, error.code == .invalidFileName else { return false }
            return error.fileName == "0000_zero.sql"
        }
        #expect {
            try Migrator(migrations: [Migration(number: 1, name: "has space", sql: "")])
        } throws: { error in
            MigrationError.Code.invalidFileName ~= error
        }
        #expect {
            try Migrator(migrations: [
                Migration(number: 1, name: "a", sql: ""), Migration(number: 1, name: "b", sql: ""),
            ])
        } throws: { error in
            guard let error = error as? MigrationError, error.code == .duplicateNumber, error.number == 1 else {
                return false
            }
            return error.fileNames == ["0001_a.sql", "0001_b.sql"]
        }
    }

    /// A migration error is matched by its code: in a `catch` clause, or
    /// compared; a code's description is its name.
    @Test func errorsMatchTheirCodeInCatchClauses() throws {
        do {
            _ = try Migrator(migrations: [Migration(number: 2, name: "b", sql: "")])
            Issue.record("expected a gap")
        } catch MigrationError.Code.invalidFileName {
            Issue.record("matched another code")
        } catch MigrationError.Code.gap {
            #expect(!(MigrationError.Code.gap ~= SQLiteError(code: .error)))
        }
        let error = MigrationError.gap(missing: 1...1, next: "0002_b.sql")
        #expect(error.code == .gap && error.code != .duplicateNumber)
        #expect(error.number == nil && error.missingNumbers == 1...1 && error.fileName == "0002_b.sql")
        #expect(MigrationError.Code.gap.description == "gap")
    }

    /// A migration from a file and the same text in code have the same
    /// checksum, so either continues a database the other started; renaming
    /// only the description is harmless.
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
                defer { queue.syncClose() }

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
