import DBWatch
import DBWatchDelivery
import DBWatchHummingbird
import DBWatchServerTestSupport
import DBWatchTestSupport
import Foundation
import Testing

/// A server configured with an epoch shared with other servers
/// (`LiveQueriesConfiguration.syncEpoch`, as replicas of one PostgreSQL):
/// a position may come from another server, whose fetches ran at other
/// positions, so a resume is accepted only from a position whose value
/// this server knows exactly.
@Suite("Sync protocol with a shared epoch")
struct SyncSharedEpochTests {
    static func configuration() -> LiveQueriesConfiguration {
        var configuration = testConfiguration()
        configuration.syncEpoch = "shared-epoch"
        return configuration
    }

    func addPlayer(_ server: HummingbirdServer, _ name: String, _ score: Int) async throws {
        try await server.database.write { db in
            try db.execute(sql: "INSERT INTO player (name, score) VALUES (?, ?)", arguments: [name, score])
        }
    }

    @Test func aResumeFromAFetchedPositionGetsChangesAndFromAnyOtherASnapshot() async throws {
        try await withTimeout {
            try await HummingbirdServer.with(configuration: Self.configuration()) { server in
                let watcher = try await SyncTestClient.connect(server.baseURL)
                #expect(watcher.helloPosition.hasPrefix("shared-epoch/"))
                try await watcher.subscribe("top", to: "top")
                var results = SyncResults()
                try results.apply(try await watcher.next())

                try await addPlayer(server, "yolanda", 10)
                let fetched = try await watcher.next()
                try results.apply(fetched)
                let fetchedAt = try #require(fetched.sequence)
                // A commit the query does not read: no fetch at its position.
                try await server.database.write { db in try db.execute(sql: "INSERT INTO control VALUES (0)") }
                let unfetched = fetchedAt + 1
                #expect(server.database.commitPosition == unfetched)
                try await addPlayer(server, "zed", 20)
                try results.apply(try await watcher.next())

                let client = try await SyncTestClient.connect(server.baseURL)
                try await client.subscribe("known", to: "top", position: "shared-epoch/\(fetchedAt)")
                try await client.subscribe("between", to: "top", position: "shared-epoch/\(unfetched)")
                var kinds: [String: String] = [:]
                while kinds.count < 2 {
                    for (id, entry) in try await client.next().changes {
                        kinds[id] = "\(entry["kind"] as? String ?? "")/\(entry["reason"] as? String ?? "")"
                    }
                }
                #expect(kinds["known"] == "catchUp/", "a position the server fetched at")
                #expect(kinds["between"] == "snapshot/resumed", "a position between two fetches")
            }
        }
    }
}
