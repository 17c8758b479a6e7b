import BenchProcess
import DBWatch
import DBWatchHummingbird
import Hummingbird

/// The routes of the sync benchmarks' server.
enum Routes {
    /// `GET /leaderboard/events`: the leaderboard as whole values (server-sent events).
    /// `GET /sync`, `POST /sync/:session`: the sync protocol, queries
    /// `leaderboard`, `item` (parameter `id`) and `itemBySlot` (parameter `slot`).
    static func addLiveRoutes(to router: Router<BasicRequestContext>, live: LiveQueries) {
        router.get("leaderboard/events") { request, context in
            live.events(LeaderboardQuery(), for: request, context: context)
        }
        live.addSyncRoutes(to: router) { subscription, _, _ in
            switch subscription.query {
            case "leaderboard":
                return .identifiable(LeaderboardQuery())
            case "item":
                guard let id = subscription.params["id"].flatMap({ Int($0) }) else {
                    throw LiveQueriesError.badRequest("item needs a numeric id")
                }
                return .identifiable(ItemQuery(id: id))
            case "itemBySlot":
                guard let slot = subscription.params["slot"].flatMap({ Int($0) }) else {
                    throw LiveQueriesError.badRequest("itemBySlot needs a numeric slot")
                }
                return .identifiable(ItemBySlotQuery(slot: slot))
            default:
                throw LiveQueriesError.unknownQuery(subscription.query)
            }
        }
    }

    /// `POST /leaderboard/commit/:round`: one player's score becomes
    /// `round` (it moves to the top). `POST /item/:id/commit/:round`: one
    /// item's round becomes `round`. Both answer `round commit-nanoseconds`
    /// (`CLOCK_MONOTONIC`, taken in the transaction).
    static func addCommitRoutes(to router: Router<BasicRequestContext>, pool: DatabasePool, players: Int) {
        router.post("leaderboard/commit/:round") { _, context -> String in
            let round = try context.parameters.require("round", as: Int.self)
            let player = LeaderboardQuery.player(movedBy: round, players: players)
            let commit = try await pool.write { db in
                try db.execute(sql: "UPDATE player SET score = ? WHERE id = ?", arguments: [round, player])
                return nowNanoseconds()
            }
            return "\(round) \(commit)"
        }
        router.post("item/:id/commit/:round") { _, context -> String in
            let id = try context.parameters.require("id", as: Int.self)
            let round = try context.parameters.require("round", as: Int.self)
            let commit = try await pool.write { db in
                try db.execute(sql: "UPDATE item SET round = ? WHERE id = ?", arguments: [round, id])
                return nowNanoseconds()
            }
            return "\(round) \(commit)"
        }
    }

    /// `GET /stats`: `clients=… observations=… fetches=… sent=…`.
    static func addStatisticsRoute(to router: Router<BasicRequestContext>, live: LiveQueries) {
        router.get("stats") { _, _ -> String in
            let statistics = live.statistics
            return
                "clients=\(statistics.clientsConnected) observations=\(statistics.observations) fetches=\(statistics.fetches) sent=\(statistics.valuesSent)"
        }
    }
}
