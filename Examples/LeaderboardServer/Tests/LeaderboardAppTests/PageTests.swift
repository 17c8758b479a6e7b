import Testing

@Suite("The leaderboard page in a browser", .enabled(if: HeadlessChromium.testsRun, HeadlessChromium.skipReason))
struct PageTests {
    /// The names shown on the page, in order, joined with commas.
    static let shownNames = ##"Array.from(document.querySelectorAll("#board .name"), (e) => e.textContent).join(",")"##

    @Test("headless Chromium shows the first leaderboard, then the new order after a POST")
    func pageFollowsScoreChanges() async throws {
        try await withTimeout(seconds: 180) {
            try await TestServer.with { server in
                try await HeadlessChromium.withPage { page in
                    try await page.navigate(to: server.baseURL + "/")
                    try await page.waitUntil(Self.shownNames, equals: seededNames.joined(separator: ","))
                    try await page.waitUntil(#"document.getElementById("state").textContent"#, equals: "live")

                    let answer = try await server.post("/players/Craig/score", json: #"{"score": 90}"#)
                    #expect(answer.status == 200)
                    try await page.waitUntil(Self.shownNames, equals: "Arthur,Craig,Barbara,Diane")
                    try await page.waitUntil(
                        ##"Array.from(document.querySelectorAll("#board .score"), (e) => e.textContent).join(",")"##,
                        equals: "100,90,80,40")
                }
            }
        }
    }
}
