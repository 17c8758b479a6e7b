import Foundation

/// Where the built `dbwatch` executable is: next to the test bundle (for
/// `swift test` and `swift test --scratch-path .build-anything`), or
/// `DBWATCH_BINARY` when set.
enum DBWatchBinary {
    /// The executable's path.
    static let path: String = {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["DBWATCH_BINARY"] { return path }
        var candidates: [URL] = []
        // The test runner (…/debug/DBWatchPackageTests.xctest) sits in the build directory.
        for start in [CommandLine.arguments.first, Bundle.main.executablePath, Bundle.main.bundlePath].compactMap({ $0 }
        ) {
            var directory = URL(fileURLWithPath: start).deletingLastPathComponent()
            for _ in 0..<3 {
                candidates.append(directory.appendingPathComponent("dbwatch"))
                directory.deleteLastPathComponent()
            }
        }
        candidates.append(Repository.root.appendingPathComponent(".build/debug/dbwatch"))
        let manager = FileManager.default
        let found = candidates.first { url in
            var isDirectory: ObjCBool = false
            return manager.fileExists(atPath: url.path, isDirectory: &isDirectory) && !isDirectory.boolValue
                && manager.isExecutableFile(atPath: url.path)
        }
        return (found ?? candidates[0]).path
    }()
}

/// The repository checkout, found from this source file's path.
enum Repository {
    /// The folder that holds `Package.swift`.
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // dbwatchTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// The repository's `Migrations/` folder.
    static var migrations: URL { root.appendingPathComponent("Migrations") }
}
