import ArgumentParser
import Foundation
import Hummingbird
import LeaderboardApp

/// `swift run LeaderboardServer [--host 127.0.0.1] [--port 8080] [--database leaderboard.sqlite]`
@main
struct LeaderboardServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "LeaderboardServer", abstract: "Serves a live leaderboard: open http://HOST:PORT/ in a browser.")

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0: any free port).")
    var port = 8080

    @Option(help: "The SQLite database, created and migrated on start.")
    var database = "leaderboard.sqlite"

    @Option(
        name: .customLong("token"),
        help: ArgumentHelp(
            "A bearer token of GET /me/events and the player it stands for (repeat).", valueName: "TOKEN=NAME"))
    var tokens: [String] = []

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        for token in tokens where !token.contains("=") || token.hasPrefix("=") || token.hasSuffix("=") {
            throw ValidationError("--token takes TOKEN=NAME")
        }
    }

    func run() async throws {
        var configuration = LeaderboardConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.databasePath = database
        for token in tokens {
            let parts = token.split(separator: "=", maxSplits: 1)
            configuration.tokens[String(parts[0])] = Viewer(name: String(parts[1]))
        }
        let app = try await buildApplication(configuration) { [host] port in
            // Unbuffered, so that a script reading the port sees it at once.
            FileHandle.standardOutput.write(Data("Leaderboard on http://\(host):\(port)/\n".utf8))
        }
        try await app.runService()  // SIGINT or SIGTERM: graceful shutdown
    }
}
