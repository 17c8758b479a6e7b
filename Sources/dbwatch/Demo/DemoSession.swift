import DBWatch
import Foundation

/// Runs `dbwatch demo`: three observations feed the screen, the simulated
/// writer writes, a ticker redraws, until Ctrl-C or `--duration`.
///
/// On a terminal the screen is redrawn in place ten times a second; into a
/// pipe or a file, a frame is appended only when something changed.
///
/// ```swift
/// var session = DemoSession(database: queue, screen: screen, simulation: simulation, color: .auto,
///                           interval: .milliseconds(250), duration: nil)
/// try await session.run(interrupt: InterruptSignal())
/// ```
struct DemoSession {
    /// The demo database.
    let database: any DatabaseWriter
    /// What is shown.
    private(set) var screen: DemoScreen
    /// The writer.
    var simulation: DemoSimulation
    /// `--color`.
    let color: ColorMode
    /// Time between two writes.
    let interval: Duration
    /// Stop after this long; `nil` for Ctrl-C only.
    let duration: Duration?
    /// The last frame drawn, without cursor movements, for after the screen is left.
    private(set) var finalFrame = ""
    private var frames = 0

    /// Creates a session; nothing runs until ``run()``.
    init(
        database: any DatabaseWriter, screen: DemoScreen, simulation: DemoSimulation, color: ColorMode,
        interval: Duration, duration: Duration?
    ) {
        self.database = database
        self.screen = screen
        self.simulation = simulation
        self.color = color
        self.interval = interval
        self.duration = duration
    }

    /// What the session waits for.
    private enum Event: Sendable {
        case leaderboard(Result<[LeaderboardRequest.Entry], any Error>)
        case teams(Result<[TeamTotalsRequest.Entry], any Error>)
        case recentChanges(Result<[RecentChangesRequest.Entry], any Error>)
        case wrote(Result<String, any Error>)
        case tick
        case stop
    }

    /// Runs until Ctrl-C, `SIGTERM` or `SIGHUP` (`interrupt`) or the duration; throws
    /// when the database file is replaced or deleted, or a write fails for
    /// want of room or by an I/O error (other failed writes are shown).
    mutating func run(interrupt: InterruptSignal) async throws {
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        let database = self.database
        let interval = self.interval
        let duration = self.duration
        let simulation = self.simulation
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await result in database.observe(LeaderboardRequest()).results {
                    continuation.yield(.leaderboard(result))
                }
            }
            group.addTask {
                for await result in database.observe(TeamTotalsRequest()).results { continuation.yield(.teams(result)) }
            }
            group.addTask {
                for await result in database.observe(RecentChangesRequest()).results {
                    continuation.yield(.recentChanges(result))
                }
            }
            group.addTask {
                var simulation = simulation
                while !Task.isCancelled {
                    try await Task.sleep(for: interval)
                    do {
                        continuation.yield(.wrote(.success(try await simulation.write(to: database))))
                    } catch is CancellationError {
                        return
                    } catch {
                        continuation.yield(.wrote(.failure(error)))
                    }
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: .milliseconds(100))
                    continuation.yield(.tick)
                }
            }
            group.addTask {
                if await interrupt.wait() != nil { continuation.yield(.stop) }
            }
            if let duration {
                group.addTask {
                    try await Task.sleep(for: duration)
                    continuation.yield(.stop)
                }
            }
            defer { group.cancelAll() }
            try await consume(events)
        }
    }

    private mutating func consume(_ events: AsyncStream<Event>) async throws {
        var isDirty = false
        let clock = ContinuousClock()
        for await event in events {
            switch event {
            case .leaderboard(let result):
                if let value = try accept(result) { screen.update(leaderboard: value, now: clock.now) }
                isDirty = true
            case .teams(let result):
                if let value = try accept(result) { screen.teams = value }
                isDirty = true
            case .recentChanges(let result):
                if let value = try accept(result) { screen.recentChanges = value }
                isDirty = true
            case .wrote(.success(let description)):
                screen.writes += 1
                screen.lastEvent = description
                isDirty = true
            case .wrote(.failure(let error)) where ExitStatus(classifying: error) == .writeFailed:
                // A full disk or a file size limit: every later write would fail too.
                throw error
            case .wrote(.failure(let error)):
                screen.lastEvent = "the write failed: \(CellText.sanitized("\(error)"))"
                isDirty = true
            case .tick:
                let terminal = Terminal.standardOutput(color: color)
                guard screen.isReady else { continue }
                // A terminal redraws each tick (highlights fade); a pipe gets a frame per change.
                if terminal.isTerminal || isDirty {
                    draw(on: terminal, now: clock.now)
                    isDirty = false
                }
            case .stop:
                let terminal = Terminal.standardOutput(color: color)
                if screen.isReady && !terminal.isTerminal && isDirty { draw(on: terminal, now: clock.now) }
                finalFrame = screen.lines(
                    width: terminal.width ?? 80, usesColor: terminal.usesColor, now: clock.now, isFinal: true
                ).joined(separator: "\n")
                return
            }
        }
    }

    /// The value of a result; a replaced database file ends the demo, other
    /// errors are shown and the demo goes on.
    private mutating func accept<Value>(_ result: Result<Value, any Error>) throws -> Value? {
        switch result {
        case .success(let value):
            return value
        case .failure(let error as DatabaseFileReplacedError):
            throw error
        case .failure(let error):
            screen.lastEvent = "an observation failed: \(CellText.sanitized("\(error)"))"
            return nil
        }
    }

    private mutating func draw(on terminal: Terminal, now: ContinuousClock.Instant) {
        frames += 1
        var statistics: [String] = []
        if let stats = database.statistics(for: LeaderboardRequest()) {
            statistics.append("leaderboard \(stats.fetches) fetches")
        }
        if let stats = database.statistics(for: TeamTotalsRequest()) { statistics.append("teams \(stats.fetches)") }
        if let stats = database.statistics(for: RecentChangesRequest()) {
            statistics.append("latest changes \(stats.fetches)")
        }
        screen.statistics = statistics.isEmpty ? "" : "Observations: " + statistics.joined(separator: " · ")
        let width = terminal.width ?? 80
        var lines = screen.lines(width: width, usesColor: terminal.usesColor, now: now)
        if terminal.isTerminal {
            if let height = terminal.height, lines.count > height { lines = Array(lines.prefix(height)) }
            let body = lines.map { $0 + ANSI.clearLine }.joined(separator: "\n")
            Output.standardOutput(ANSI.home + body + ANSI.clearBelow)
        } else {
            let header = "--- frame \(frames) · \(Timestamp.clock(Date())) ---"
            Output.standardOutput(header + "\n" + lines.joined(separator: "\n") + "\n\n")
        }
    }
}
