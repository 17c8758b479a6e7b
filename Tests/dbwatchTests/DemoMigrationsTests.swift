import DBWatch
import Foundation
import Testing

@testable import dbwatch

@Suite("The demo's embedded migrations")
struct DemoMigrationsTests {
    /// The demo carries every file of `Migrations/`, byte for byte: fails
    /// while a file there is missing from `DemoMigrations.files`.
    @Test func embeddedCopyMatchesTheMigrationsFolderByteForByte() throws {
        let folder = Repository.migrations.path
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(
            DemoMigrations.files.map(\.fileName) == names,
            "Migrations/ and DemoMigrations.files list different files: list the new file there")
        for (fileName, sql) in DemoMigrations.files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + fileName))
            #expect(
                Data(sql.utf8) == bytes,
                "\(fileName) differs from its embedded copy")
        }
    }

    @Test func embeddedMigrationsHaveTheFilesChecksums() throws {
        let fromFiles = try Migrator(directory: Repository.migrations.path).migrations
        let embedded = try Migrator(migrations: DemoMigrations.migrations).migrations
        #expect(embedded.map(\.fileName) == fromFiles.map(\.fileName))
        #expect(embedded.map(\.checksum) == fromFiles.map(\.checksum))
    }
}
