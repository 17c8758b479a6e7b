import Foundation
import Testing
import DBWatchTestSupport

/// The page of `dbwatch serve` in headless Chromium, the database written
/// by the stock `sqlite3` shell.
@Suite("dbwatch serve's page in a browser", RequiredProgram.sqlite3.trait, RequiredProgram.chromium.trait)
struct ServePageTests {
    /// The texts of the cells of query `name`'s table matching `selector`, joined with commas.
    static func cells(_ name: String, _ selector: String = "td") -> String {
        ##"Array.from(document.querySelectorAll("#query-\##(name) \##(selector)"), (e) => e.textContent).join(",")"##
    }

    @Test(
        "headless Chromium shows the first tables, then highlights the cell an external commit changed",
        .hangLimit(minutes: 3))
    func pageShowsTablesAndHighlightsChangedCells() async throws {
        try await withTemporaryDirectory { scratch in
            let path = scratch.file("game.sqlite")
            try Shell.sqlite(
                """
                PRAGMA journal_mode = WAL;
                CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL, team TEXT);
                INSERT INTO player (name, score, team) VALUES ('Arthur', 100, 'red'), ('Barbara', 80, 'blue'),
                    ('Craig', 50, 'red');
                """, on: path)
            let run = try DBWatchRun.start([
                "serve", path, "--port", "0", "--interval", "0.1",
                "--query", "top=SELECT name, score FROM player ORDER BY score DESC, name LIMIT :n",
                "--query", "teams=SELECT team, sum(score) AS total FROM player GROUP BY team ORDER BY team",
                "--query", "players=SELECT id, name, score FROM player ORDER BY score DESC, id",
            ])
            defer { run.kill() }
            let snapshot = try await run.wait(for: "the address", timeout: defaultTestTimeout) {
                $0.stdout.contains("/\n")
            }
            let url = try #require(snapshot.stdout.firstMatch(of: /http:\/\/127\.0\.0\.1:\d+\//)).output
            // Not while a test measures latency under CPU load (see LatencyTestLock).
            try await LatencyTestLock.with(exclusive: true) {
                try await HeadlessChromium.withPage { page in
                    // `n` comes from the page's own query string.
                    try await page.navigate(to: url + "?n=2")
                    try await page.waitUntil("document.title", equals: "game.sqlite · dbwatch")
                    try await page.waitUntil(Self.cells("top"), equals: "Arthur,100,Barbara,80")
                    try await page.waitUntil(Self.cells("teams"), equals: "blue,80,red,150")
                    try await page.waitUntil(Self.cells("teams", "th"), equals: "team,total")
                    try await page.waitUntil(Self.cells("teams", "td.changed"), equals: "")

                    try Shell.run(
                        Shell.sqlite3,
                        ["-bail", "-cmd", ".timeout 5000", path, "UPDATE player SET score = 90 WHERE name = 'Barbara'"])
                    try await page.waitUntil(Self.cells("teams"), equals: "blue,90,red,150")
                    try await page.waitUntil(Self.cells("teams", "td.changed"), equals: "90")
                    try await page.waitUntil(Self.cells("top"), equals: "Arthur,100,Barbara,90")
                    try await page.waitUntil(Self.cells("top", "td.changed"), equals: "90")

                    // Rows with a key (the rowid `id`) are matched by it, as `watch`
                    // does: a row that moved up is not a changed row.
                    try await page.waitUntil(Self.cells("players"), equals: "1,Arthur,100,2,Barbara,90,3,Craig,50")
                    try Shell.run(
                        Shell.sqlite3,
                        ["-bail", "-cmd", ".timeout 5000", path, "UPDATE player SET score = 200 WHERE name = 'Craig'"])
                    try await page.waitUntil(Self.cells("players"), equals: "3,Craig,200,1,Arthur,100,2,Barbara,90")
                    try await page.waitUntil(Self.cells("players", "td.changed"), equals: "200")
                }
            }
        }
    }
}
