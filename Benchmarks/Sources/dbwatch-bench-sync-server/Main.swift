import BenchProcess
import DBWatch
import DBWatchHummingbird
import Foundation
import Hummingbird
import Logging

/// The server of the sync protocol's benchmarks (issue 26), on 127.0.0.1.
///
///     dbwatch-bench-sync-server --db PATH [--players N] [--items N] [--max-observations N]
///                               [--sync-linger-seconds S] [--port P]
///
/// Serves one leaderboard of `--players` rows as whole values and over the
/// sync protocol, and `--items` items by id over the sync protocol (see
/// ``Routes``). Prints `port=P` once it accepts connections; stops on
/// SIGTERM or SIGINT.
@main
struct SyncBenchServer {
    static func main() async throws {
        let arguments = try SyncServerArguments(CommandLine.arguments.dropFirst())
        _ = raiseFileLimit()
        var logger = Logger(label: "dbwatch-bench-sync-server")
        logger.logLevel = .error
        var configuration = Configuration()
        configuration.logger = logger
        let pool = try DatabasePool(path: arguments.database, configuration: configuration)
        try await createSchema(pool, players: arguments.players, items: arguments.items)
        var liveConfiguration = LiveQueriesConfiguration()
        // No keep-alive comment during a run: the streams carry only values and batches.
        liveConfiguration.keepAliveInterval = .seconds(3600)
        liveConfiguration.maxObservations = arguments.maxObservations
        liveConfiguration.syncLinger = .seconds(arguments.syncLingerSeconds)
        let live = LiveQueries(pool, configuration: liveConfiguration, logger: logger)
        let router = Router()
        Routes.addLiveRoutes(to: router, live: live)
        Routes.addCommitRoutes(to: router, pool: pool, players: arguments.players)
        Routes.addStatisticsRoute(to: router, live: live)
        var app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: arguments.port), backlog: 4096),
            onServerRunning: { channel in
                print("port=\(channel.localAddress?.port ?? 0)")
                fflush(nil)
            },
            logger: logger)
        app.addServices(live)
        try await app.runService()
    }
}

/// The server's command line.
struct SyncServerArguments {
    var database = ""
    var players = 1_000
    var items = 1
    var maxObservations = 1_000
    var syncLingerSeconds = 120
    var port = 0

    init(_ arguments: ArraySlice<String>) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard let value = iterator.next() else { throw SyncServerError(description: "\(argument) needs a value") }
            switch argument {
            case "--db": database = value
            case "--players": players = max(Int(value) ?? 1_000, 1)
            case "--items": items = max(Int(value) ?? 1, 1)
            case "--max-observations": maxObservations = max(Int(value) ?? 1_000, 1)
            case "--sync-linger-seconds": syncLingerSeconds = max(Int(value) ?? 120, 0)
            case "--port": port = Int(value) ?? 0
            default: throw SyncServerError(description: "unknown option \(argument)")
            }
        }
        if database.isEmpty { throw SyncServerError(description: "--db PATH is required") }
    }
}

struct SyncServerError: Error, CustomStringConvertible {
    let description: String
}
