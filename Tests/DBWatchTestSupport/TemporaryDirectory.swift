import Foundation

/// A fresh directory under the system temporary folder, removed by
/// `remove()`.
public struct TemporaryDirectory: Sendable {
    /// The directory's path.
    public let path: String

    /// Creates `…/dbwatch-tests-UUID` under the system temporary folder.
    public init() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "dbwatch-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        path = base.path
    }

    /// A path inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// The names in the directory, sorted.
    public func listing() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    /// Removes the directory and what it holds.
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a temporary directory that is removed afterwards.
public func withTemporaryDirectory<T>(_ body: (TemporaryDirectory) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    return try await body(directory)
}
