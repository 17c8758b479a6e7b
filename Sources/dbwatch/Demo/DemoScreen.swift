import Foundation

/// What `dbwatch demo` shows: the leaderboard and the team totals side by
/// side (stacked on a narrow terminal), the latest score changes, the last
/// simulated write and the observations' counters.
///
/// ```swift
/// var screen = DemoScreen(source: "in memory", seed: 7)
/// screen.leaderboard = players
/// let lines = screen.lines(width: 100, usesColor: true, now: .now)
/// ```
struct DemoScreen {
    /// Where the database is: `in memory` or its path.
    var source: String
    /// The seed of the simulated writes.
    var seed: UInt64
    /// The latest leaderboard.
    private(set) var leaderboard: [LeaderboardRequest.Entry]?
    /// The latest team totals.
    var teams: [TeamTotalsRequest.Entry]?
    /// The latest score changes.
    var recentChanges: [RecentChangesRequest.Entry]?
    /// The number of simulated writes.
    var writes = 0
    /// The description of the last write, or of the last error.
    var lastEvent = "starting"
    /// The observations' counters, one short phrase each.
    var statistics = ""
    /// What to try elsewhere (a browser, another terminal), one line or several, if any.
    var hint: String?

    /// How long a changed score and a rank move stay highlighted.
    static let highlightDuration: Duration = .milliseconds(1500)
    private var highlights: [Int64: Highlight] = [:]

    private struct Highlight {
        var until: ContinuousClock.Instant
        var scoreChanged: Bool
        var move: Int
        var isNew: Bool
    }

    /// Creates a screen with nothing fetched yet.
    init(source: String, seed: UInt64) {
        self.source = source
        self.seed = seed
    }

    /// Whether the first values have arrived.
    var isReady: Bool { leaderboard != nil && teams != nil }

    /// Sets a new leaderboard, remembering what moved for the highlights.
    mutating func update(leaderboard new: [LeaderboardRequest.Entry], now: ContinuousClock.Instant) {
        if let old = leaderboard {
            let oldRanks = Dictionary(old.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
            let oldScores = Dictionary(old.map { ($0.id, $0.score) }, uniquingKeysWith: { first, _ in first })
            for (rank, entry) in new.enumerated() {
                let previousRank = oldRanks[entry.id]
                let scoreChanged = oldScores[entry.id].map { $0 != entry.score } ?? false
                let move = previousRank.map { $0 - rank } ?? 0
                if scoreChanged || move != 0 || previousRank == nil {
                    highlights[entry.id] = Highlight(
                        until: now + DemoScreen.highlightDuration, scoreChanged: scoreChanged, move: move,
                        isNew: previousRank == nil)
                }
            }
        }
        leaderboard = new
    }

    /// Whether a highlight is showing (the screen changes when it ends).
    func hasHighlights(at now: ContinuousClock.Instant) -> Bool {
        highlights.values.contains { $0.until > now }
    }

    /// The lines of the screen for a terminal `width` columns wide.
    ///
    /// - Parameters:
    ///   - width: the terminal's width.
    ///   - color: whether to use ANSI colours.
    ///   - now: for the highlights of recent changes.
    ///   - isFinal: the frame left on screen after the demo: no "Ctrl-C" line.
    func lines(width: Int, usesColor color: Bool, now: ContinuousClock.Instant, isFinal: Bool = false) -> [String] {
        let title = ANSI.style("DBWatch demo", .bold, enabled: color) + " · live leaderboard"
        let status = "\(source) · seed \(seed) · \(writes) writes"
        var lines = [fit(title, right: status, width: width)]
        lines.append("")
        let left = leaderboardLines(color: color, now: now)
        let right = teamLines(color: color) + [""] + recentLines(color: color)
        if width >= DemoScreen.leftWidth + 4 + DemoScreen.rightWidth {
            for index in 0..<max(left.count, right.count) {
                let leftLine = index < left.count ? left[index] : ""
                let rightLine = index < right.count ? right[index] : ""
                lines.append(
                    rightLine.isEmpty
                        ? leftLine
                        : CellText.paddedVisible(leftLine, toWidth: DemoScreen.leftWidth) + "    " + rightLine)
            }
        } else {
            lines += left + [""] + right
        }
        lines.append("")
        lines.append("Last write: " + lastEvent)
        if !statistics.isEmpty { lines.append(ANSI.style(statistics, .dim, enabled: color)) }
        for line in hint?.split(separator: "\n") ?? [] { lines.append(ANSI.style(String(line), .dim, enabled: color)) }
        if !isFinal { lines.append(ANSI.style("Ctrl-C to quit", .dim, enabled: color)) }
        return lines
    }

    static let leftWidth = 36
    static let rightWidth = 36

    private func leaderboardLines(color: Bool, now: ContinuousClock.Instant) -> [String] {
        let header =
            CellText.padded("#", toWidth: 3, alignRight: true) + "  " + CellText.padded("Player", toWidth: 12) + "  "
            + CellText.padded("Team", toWidth: 7) + "  " + CellText.padded("Score", toWidth: 6, alignRight: true)
        var lines = [ANSI.style(header, .bold, enabled: color)]
        guard let leaderboard else { return lines + ["  (loading)"] }
        if leaderboard.isEmpty { lines.append("  (no players)") }
        for (rank, entry) in leaderboard.enumerated() {
            let highlight = highlights[entry.id].flatMap { $0.until > now ? $0 : nil }
            let rankText = CellText.padded("\(rank + 1)", toWidth: 3, alignRight: true)
            var name = CellText.padded(CellText.truncated(entry.name, toWidth: 12), toWidth: 12)
            if highlight?.isNew == true { name = ANSI.style(name, .bold, enabled: color) }
            let team = ANSI.style(
                CellText.padded(CellText.truncated(entry.team ?? "-", toWidth: 7), toWidth: 7),
                DemoScreen.style(for: entry.color), enabled: color)
            var score = CellText.padded(String(entry.score), toWidth: 6, alignRight: true)
            if highlight?.scoreChanged == true { score = ANSI.style(score, .reverse, enabled: color) }
            var move = "  "
            if let highlight {
                if highlight.isNew {
                    move = ANSI.style(" ✦", .cyan, enabled: color)
                } else if highlight.move > 0 {
                    move = ANSI.style(" ▲", .green, enabled: color)
                } else if highlight.move < 0 {
                    move = ANSI.style(" ▼", .red, enabled: color)
                }
            }
            lines.append("\(rankText)  \(name)  \(team)  \(score)\(move)")
        }
        return lines
    }

    private func teamLines(color: Bool) -> [String] {
        let header =
            CellText.padded("Team", toWidth: 7) + "  " + CellText.padded("Players", toWidth: 8, alignRight: true)
            + CellText.padded("Total", toWidth: 7, alignRight: true)
        var lines = [ANSI.style(header, .bold, enabled: color)]
        guard let teams else { return lines + ["(loading)"] }
        let best = max(1, teams.map(\.total).max() ?? 1)
        for team in teams {
            let name = ANSI.style(
                CellText.padded(CellText.truncated(team.name, toWidth: 7), toWidth: 7),
                DemoScreen.style(for: team.color), enabled: color)
            let players = CellText.padded(String(team.players), toWidth: 8, alignRight: true)
            let total = CellText.padded(String(team.total), toWidth: 7, alignRight: true)
            let bar = ANSI.style(
                DemoScreen.bar(team.total, of: best, width: 11), DemoScreen.style(for: team.color), enabled: color)
            lines.append("\(name)  \(players)\(total) \(bar)")
        }
        return lines
    }

    private func recentLines(color: Bool) -> [String] {
        var lines = [ANSI.style("Latest score changes", .bold, enabled: color)]
        guard let recentChanges, !recentChanges.isEmpty else { return lines + ["(none yet)"] }
        for change in recentChanges {
            let name = CellText.padded(CellText.truncated(change.name, toWidth: 12), toWidth: 12)
            let delta = change.newScore - change.oldScore
            let sign = delta >= 0 ? "+" : "−"
            let deltaText = ANSI.style(
                CellText.padded("\(sign)\(abs(delta))", toWidth: 4, alignRight: true), delta >= 0 ? .green : .red,
                enabled: color)
            lines.append("\(name) \(deltaText)  \(change.oldScore) → \(change.newScore)")
        }
        return lines
    }

    /// `left` and `right` on one line, `right` against the right edge.
    private func fit(_ left: String, right: String, width: Int) -> String {
        let gap = width - CellText.visibleWidth(of: left) - CellText.width(of: right)
        if gap < 2 { return left }
        return left + String(repeating: " ", count: gap) + right
    }

    /// A bar of `value` out of `maximum`, `width` cells, in eighths.
    static func bar(_ value: Int, of maximum: Int, width: Int) -> String {
        let eighths = max(0, min(width * 8, value * width * 8 / max(1, maximum)))
        let partial = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"][eighths % 8]
        return String(repeating: "█", count: eighths / 8) + partial
    }

    /// The ANSI colour of a team colour name.
    static func style(for color: String?) -> [ANSI.Style] {
        switch color {
        case "red": return [.red]
        case "blue": return [.blue]
        case "green": return [.green]
        case "yellow", "gold": return [.yellow]
        case "gray", "grey": return [.gray]
        case "magenta", "purple": return [.magenta]
        case "cyan": return [.cyan]
        default: return []
        }
    }
}
