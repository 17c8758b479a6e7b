import Testing

/// The page (`Resources/index.html`) in headless Chromium: it shows the
/// leaderboard and the number of players from one sync connection
/// (`/dbwatch.js`), and follows the commits.
@Suite("The leaderboard page in a browser", .enabled(if: HeadlessChromium.testsRun, HeadlessChromium.skipReason))
struct PageTests {
    /// The names shown on the page, in order, joined with commas.
    static let shownNames = ##"Array.from(document.querySelectorAll("#board .name"), (e) => e.textContent).join(",")"##
    /// The scores shown on the page, in order, joined with commas.
    static let shownScores =
        ##"Array.from(document.querySelectorAll("#board .score"), (e) => e.textContent).join(",")"##
    /// The names of the rows the last batch inserted or updated.
    static let changedNames =
        ##"Array.from(document.querySelectorAll("#board li.changed .name"), (e) => e.textContent).join(",")"##
    /// The connection's status badge.
    static let state = #"document.getElementById("state").textContent"#
    /// The number of players.
    static let count = #"document.getElementById("count").textContent"#
    /// The error line.
    static let error = #"document.getElementById("error").textContent"#

    /// Fills the page's form and submits it, as a visitor would.
    static func submitScore(name: String, score: Int) -> String {
        """
        (() => {
          const form = document.getElementById("change");
          form.elements.namedItem("name").value = "\(name)";
          form.elements.namedItem("score").value = "\(score)";
          form.requestSubmit();
          return "sent";
        })()
        """
    }

    @Test("the page shows the leaderboard live: keyed changes of each commit, from its form and from elsewhere")
    func pageFollowsCommits() async throws {
        try await withTimeout(seconds: 180) {
            try await TestServer.with { server in
                try await HeadlessChromium.withPage { page in
                    try await page.navigate(to: server.baseURL + "/")
                    try await page.waitUntil(Self.shownNames, equals: seededNames.joined(separator: ","))
                    try await page.waitUntil(Self.count, equals: "4 players")
                    try await page.waitUntil(Self.state, equals: "live")
                    #expect(try await page.evaluate(Self.changedNames) == #""""#)

                    // A commit from the page's own form: Craig moves up, and
                    // only his row (the one the batch updated) is marked.
                    #expect(try await page.evaluate(Self.submitScore(name: "Craig", score: 90)) == #""sent""#)
                    try await page.waitUntil(Self.shownNames, equals: "Arthur,Craig,Barbara,Diane")
                    try await page.waitUntil(Self.shownScores, equals: "100,90,80,40")
                    try await page.waitUntil(Self.changedNames, equals: "Craig")
                    #expect(try await page.evaluate(Self.count) == #""4 players""#)

                    // A commit from another client: a new player, in the
                    // leaderboard and in the count.
                    let answer = try await server.post("/players/Erin/score", json: #"{"score": 85}"#)
                    #expect(answer.status == 200)
                    try await page.waitUntil(Self.shownNames, equals: "Arthur,Craig,Erin,Barbara,Diane")
                    try await page.waitUntil(Self.shownScores, equals: "100,90,85,80,40")
                    try await page.waitUntil(Self.count, equals: "5 players")
                    try await page.waitUntil(Self.changedNames, equals: "Erin")
                    #expect(try await page.evaluate(Self.error) == #""""#)
                    #expect(try await page.evaluate(Self.state) == #""live""#)
                }
            }
        }
    }

    @Test("the badge says live, then reconnecting… once the server has shut down")
    func statusFollowsTheConnection() async throws {
        try await withTimeout(seconds: 180) {
            try await HeadlessChromium.withPage { page in
                try await TestServer.with { server in
                    try await page.navigate(to: server.baseURL + "/")
                    try await page.waitUntil(Self.state, equals: "live")
                    try await page.waitUntil(Self.count, equals: "4 players")
                }
                // Shut down gracefully: the stream ended, and no server answers the new attempts.
                try await page.waitUntil(Self.state, equals: "reconnecting…")
                #expect(try await page.evaluate(Self.shownNames) == #""Arthur,Barbara,Craig,Diane""#)
            }
        }
    }

    @Test("?limit=2 shows the best two; a limit the server refuses shows its error")
    func limitFromTheAddress() async throws {
        try await withTimeout(seconds: 180) {
            try await TestServer.with { server in
                try await HeadlessChromium.withPage { page in
                    try await page.navigate(to: server.baseURL + "/?limit=2")
                    try await page.waitUntil(Self.shownNames, equals: "Arthur,Barbara")
                    try await page.waitUntil(Self.count, equals: "4 players")
                    _ = try await server.post("/players/Diane/score", json: #"{"score": 90}"#)
                    try await page.waitUntil(Self.shownNames, equals: "Arthur,Diane")

                    try await page.navigate(to: server.baseURL + "/?limit=lots")
                    try await page.waitUntil(Self.error, equals: "The query failed: limit is an integer from 0 to 100")
                    try await page.waitUntil(Self.count, equals: "4 players")
                    try await page.waitUntil(Self.state, equals: "live")
                    #expect(try await page.evaluate(Self.shownNames) == #""""#)
                }
            }
        }
    }
}
