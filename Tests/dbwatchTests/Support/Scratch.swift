import Foundation

/// A fresh folder for one test, removed by `remove()`.
struct Scratch: Sendable {
    /// The folder's path.
    let path: String

    /// Creates `…/dbwatch-cli-tests-UUID` under the system temp folder.
    init() throws {
        path =
            FileManager.default.temporaryDirectory.appendingPathComponent("dbwatch-cli-tests-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside the folder.
    func file(_ name: String) -> String { path + "/" + name }

    /// The names in the folder, sorted.
    func listing() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    /// Removes the folder.
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a scratch folder, removed afterwards.
func withScratch<T>(_ body: (Scratch) async throws -> T) async throws -> T {
    let scratch = try Scratch()
    defer { scratch.remove() }
    return try await body(scratch)
}
