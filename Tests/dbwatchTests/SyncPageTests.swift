import DBWatch
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// The README's page of the sync protocol, exactly as the README shows it,
/// in headless Chromium against a Hummingbird server whose `top` query is
/// keyed by the players' ids: the list follows the commits.
@Suite("The README's sync page in Chromium", RequiredProgram.chromium.trait)
struct SyncPageTests {
    /// The README's HTML example of "Keyed changes in a page".
    static func readmePage() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "### Keyed changes in a page"))
        let start = try #require(readme.range(of: "```html\n", range: section.upperBound..<readme.endIndex))
        let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        return String(readme[start.upperBound..<end.lowerBound])
    }

    @Test func theListFollowsTheCommits() async throws {
        let page = try Self.readmePage()
        #expect(page.contains(#"import { connect } from "/dbwatch.js""#))
        try await withTimeout {
            try await HummingbirdServer.with(page: page) { server in
                try await LatencyTestLock.with(exclusive: true) {
                    try await HeadlessChromium.withPage { browser in
                        try await browser.navigate(to: "\(server.baseURL)/page")
                        let list = "[...document.querySelectorAll('#top li')].map((li) => li.textContent).join(',')"
                        try await browser.waitUntil(list, equals: "arthur 100,barbara 80")
                        try await server.database.write { db in
                            try db.execute(sql: "INSERT INTO player (name, score) VALUES ('carol', 90)")
                        }
                        try await browser.waitUntil(list, equals: "arthur 100,carol 90,barbara 80")
                        try await server.database.write { db in
                            try db.execute(sql: "UPDATE player SET score = 200 WHERE name = 'barbara'")
                        }
                        try await browser.waitUntil(list, equals: "barbara 200,arthur 100,carol 90")
                    }
                }
            }
        }
    }
}
