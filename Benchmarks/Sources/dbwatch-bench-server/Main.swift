import BenchProcess
import DBWatch
import DBWatchHummingbird
import Foundation
import Hummingbird
import Logging

/// The server of the fan-out benchmarks (issue 16), on 127.0.0.1.
///
///     dbwatch-bench-server --mode dbwatch|baseline --db PATH [--rows N] [--port P]
///
/// Prints `port=P` once it accepts connections; stops on SIGTERM or SIGINT.
///
/// `--mode dbwatch` serves DBWatch live queries over a file database:
/// - `GET /board/events`: server-sent events of ``Board``, one query shared by every client
/// - `GET /item/:id/events`: server-sent events of ``Item`` (`WHERE id = ?`), one query per row
/// - `POST /board/write/:round`: sets the board's round (a write that changes its value)
/// - `POST /item/:id/write/:round`: sets one item's round
/// - `POST /log/write/:value`: inserts into a table that no client observes
/// - `POST /burst/board|item|log/:milliseconds`: writes like the three
///   above, one transaction after another in the server process, for that
///   long; answers `count nanoseconds`
///
/// `--mode baseline` is the same Hummingbird server without DBWatch:
/// `GET /board/events` streams a constant board of the same size and shape,
/// pushed to every client by `POST /board/write/:round` (the cost of the
/// sockets alone).
///
/// Both answer a write with `round commit-nanoseconds` (`CLOCK_MONOTONIC`,
/// taken in the write's transaction, or before the baseline's broadcast) and
/// `GET /stats` with `rss=… cpu=… clients=… fetches=… sent=…` (RSS after
/// `malloc_trim`, CPU time of the process in nanoseconds).
@main
struct BenchServer {
    static func main() async throws {
        let arguments = try ServerArguments(CommandLine.arguments.dropFirst())
        let files = raiseFileLimit()
        FileHandle.standardError.write(
            Data("dbwatch-bench-server: \(arguments.mode), open files limit \(files)\n".utf8))
        var logger = Logger(label: "dbwatch-bench-server")
        logger.logLevel = .error
        let router = Router()
        var live: LiveQueries?
        let clientCount: @Sendable () -> (clients: Int, fetches: Int, sent: Int)
        switch arguments.mode {
        case "dbwatch":
            var configuration = Configuration()
            configuration.logger = logger
            let pool = try DatabasePool(path: arguments.database, configuration: configuration)
            try await createSchema(pool, rows: arguments.rows)
            var liveConfiguration = LiveQueriesConfiguration()
            // No keep-alive comment during a run: both servers stream only values.
            liveConfiguration.keepAliveInterval = .seconds(3600)
            let liveQueries = LiveQueries(pool, configuration: liveConfiguration, logger: logger)
            live = liveQueries
            addLiveRoutes(to: router, live: liveQueries, pool: pool, rows: arguments.rows)
            clientCount = {
                let statistics = liveQueries.statistics
                return (statistics.clientsConnected, statistics.fetches, statistics.valuesSent)
            }
        case "baseline", "baseline-task":
            let broadcaster = Broadcaster(first: Board.initial.frame(round: 0))
            addBaselineRoutes(to: router, broadcaster: broadcaster, childTask: arguments.mode == "baseline-task")
            clientCount = { (broadcaster.count, 0, broadcaster.sent) }
        default:
            throw ServerError(description: "--mode is dbwatch, baseline or baseline-task")
        }
        router.get("stats") { _, _ -> String in
            let counts = clientCount()
            return
                "rss=\(residentBytes()) cpu=\(cpuNanoseconds()) clients=\(counts.clients) fetches=\(counts.fetches) sent=\(counts.sent)"
        }
        var app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: arguments.port), backlog: 4096),
            onServerRunning: { channel in
                print("port=\(channel.localAddress?.port ?? 0)")
                fflush(nil)
            },
            logger: logger)
        if let live { app.addServices(live) }
        try await app.runService()
    }

    static func createSchema(_ pool: DatabasePool, rows: Int) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY, round INTEGER NOT NULL);
                    CREATE TABLE IF NOT EXISTS player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL);
                    CREATE TABLE IF NOT EXISTS item (id INTEGER PRIMARY KEY, round INTEGER NOT NULL, text TEXT NOT NULL);
                    CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY, value INTEGER NOT NULL);
                    DELETE FROM meta; DELETE FROM player; DELETE FROM item; DELETE FROM log;
                    INSERT INTO meta (id, round) VALUES (1, 0);
                    """)
            for player in Board.initial.players {
                try db.execute(
                    sql: "INSERT INTO player (id, name, score) VALUES (?, ?, ?)",
                    arguments: [player.id, player.name, player.score])
            }
            for id in 1...max(rows, 1) {
                try db.execute(
                    sql: "INSERT INTO item (id, round, text) VALUES (?, 0, ?)", arguments: [id, Item.text(id)])
            }
        }
    }

    static func addLiveRoutes(
        to router: Router<BasicRequestContext>, live: LiveQueries, pool: DatabasePool, rows: Int
    ) {
        router.get("board/events") { request, context in
            live.events(Board.Query(), for: request, context: context)
        }
        router.get("item/:id/events") { request, context in
            let id = try context.parameters.require("id", as: Int.self)
            return live.events(Item.Query(id: id), for: request, context: context)
        }
        router.post("board/write/:round") { _, context -> String in
            let round = try context.parameters.require("round", as: Int.self)
            let commit = try await pool.write { db in
                try db.execute(sql: "UPDATE meta SET round = ? WHERE id = 1", arguments: [round])
                try db.execute(sql: "UPDATE player SET score = score + 1 WHERE id = ?", arguments: [round % 10 + 1])
                return nowNanoseconds()
            }
            return "\(round) \(commit)"
        }
        router.post("burst/:kind/:milliseconds") { _, context -> String in
            let kind = try context.parameters.require("kind")
            let duration = UInt64(min(try context.parameters.require("milliseconds", as: Int.self), 10_000)) * 1_000_000
            let start = nowNanoseconds()
            var count = 0
            while nowNanoseconds() - start < duration {
                count += 1
                let value = 10_000_000 + count
                try await pool.write { db in
                    switch kind {
                    case "board":
                        try db.execute(sql: "UPDATE meta SET round = ? WHERE id = 1", arguments: [value])
                        try db.execute(
                            sql: "UPDATE player SET score = score + 1 WHERE id = ?", arguments: [value % 10 + 1])
                    case "item":
                        try db.execute(
                            sql: "UPDATE item SET round = ? WHERE id = ?", arguments: [value, value * 7_919 % rows + 1])
                    default:
                        try db.execute(sql: "INSERT INTO log (value) VALUES (?)", arguments: [value])
                    }
                }
            }
            return "\(count) \(nowNanoseconds() - start)"
        }
        router.post("log/write/:value") { _, context -> String in
            let value = try context.parameters.require("value", as: Int.self)
            let commit = try await pool.write { db in
                try db.execute(sql: "INSERT INTO log (value) VALUES (?)", arguments: [value])
                return nowNanoseconds()
            }
            return "\(value) \(commit)"
        }
        router.post("item/:id/write/:round") { _, context -> String in
            let id = try context.parameters.require("id", as: Int.self)
            let round = try context.parameters.require("round", as: Int.self)
            let commit = try await pool.write { db in
                try db.execute(sql: "UPDATE item SET round = ? WHERE id = ?", arguments: [round, id])
                return nowNanoseconds()
            }
            return "\(round) \(commit)"
        }
    }

    /// `childTask`: each client's write loop runs in a child task of a task
    /// group, as DBWatch's clients do (so that a blocked write can be
    /// cancelled): the memory that this structure costs per client.
    static func addBaselineRoutes(to router: Router<BasicRequestContext>, broadcaster: Broadcaster, childTask: Bool) {
        router.get("board/events") { request, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
                body: ResponseBody { writer in
                    let (id, frames) = broadcaster.subscribe()
                    defer { broadcaster.unsubscribe(id) }
                    if childTask {
                        let box = WriterBox(writer)
                        _ = try await request.body.consumeWithInboundCloseHandler { _ in
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                group.addTask {
                                    for await frame in frames {
                                        try await box.write(frame)
                                        broadcaster.countSent()
                                    }
                                }
                                try await group.next()
                            }
                        } onInboundClosed: {
                            broadcaster.unsubscribe(id)
                        }
                        try await box.finish()
                        return
                    }
                    _ = try await request.body.consumeWithInboundCloseHandler { _ in
                        for await frame in frames {
                            try await writer.write(frame)
                            broadcaster.countSent()
                        }
                    } onInboundClosed: {
                        broadcaster.unsubscribe(id)
                    }
                    try await writer.finish(nil)
                })
        }
        router.post("board/write/:round") { _, context -> String in
            let round = try context.parameters.require("round", as: Int.self)
            let trigger = nowNanoseconds()
            broadcaster.broadcast(Board.initial.frame(round: round))
            return "\(round) \(trigger)"
        }
    }
}

struct ServerArguments {
    var mode = "dbwatch"
    var database = ""
    var rows = 1
    var port = 0

    init(_ arguments: ArraySlice<String>) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard let value = iterator.next() else { throw ServerError(description: "\(argument) needs a value") }
            switch argument {
            case "--mode": mode = value
            case "--db": database = value
            case "--rows": rows = Int(value) ?? 1
            case "--port": port = Int(value) ?? 0
            default: throw ServerError(description: "unknown option \(argument)")
            }
        }
        if mode == "dbwatch" && database.isEmpty { throw ServerError(description: "--db PATH is required") }
    }
}

struct ServerError: Error, CustomStringConvertible {
    let description: String
}
