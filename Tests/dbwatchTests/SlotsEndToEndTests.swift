import DBWatchTestSupport
import Foundation
import Testing

/// `dbwatch slots` against a real PostgreSQL.
@Suite("dbwatch slots: end to end", RequiredProgram.postgresql.trait)
struct SlotsEndToEndTests {
    @Test func listShowsReplicaSlotsAndDropRemovesOne() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                try await server.psql(
                    """
                    CREATE TABLE player (id int PRIMARY KEY);
                    CREATE PUBLICATION dbwatch_gone FOR TABLE player;
                    SELECT pg_create_logical_replication_slot('dbwatch_gone', 'pgoutput');
                    SELECT pg_create_logical_replication_slot('dbwatch_kept', 'pgoutput');
                    SELECT pg_create_logical_replication_slot('someone_else', 'pgoutput');
                    """)
                let list = try await DBWatchRun.run(["slots", "list", server.connectionURL])
                #expect(list.exitStatus == 0, "\(list)")
                #expect(list.lines.count == 3, "\(list)")
                #expect(list.lines.first?.hasPrefix("NAME") == true)
                #expect(
                    list.lines.dropFirst().map { $0.split(separator: " ").first } == ["dbwatch_gone", "dbwatch_kept"])
                #expect(!list.stdout.contains("someone_else"))

                let json = try await DBWatchRun.run(["slots", "list", server.connectionURL, "--json"])
                #expect(json.exitStatus == 0, "\(json)")
                let objects = try #require(
                    try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
                #expect(objects.compactMap { $0["name"] as? String } == ["dbwatch_gone", "dbwatch_kept"])
                #expect(
                    objects.allSatisfy { $0["active"] as? Bool == false && $0["database"] as? String == "postgres" })

                let drop = try await DBWatchRun.run(["slots", "drop", server.connectionURL, "dbwatch_gone"])
                #expect(drop.exitStatus == 0, "\(drop)")
                #expect(
                    try await server.psql("SELECT slot_name FROM pg_replication_slots ORDER BY 1")
                        == "dbwatch_kept\nsomeone_else")
                #expect(try await server.psql("SELECT count(*) FROM pg_publication") == "0")
            }
        }
    }

    @Test func dropRefusesWhatItMustNotDrop() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                let other = try await server.createDatabase()
                try await server.psql("SELECT pg_create_logical_replication_slot('someone_else', 'pgoutput')")
                try await server.psql(
                    "SELECT pg_create_logical_replication_slot('dbwatch_elsewhere', 'pgoutput')", database: other)
                let notOurs = try await DBWatchRun.run(["slots", "drop", server.connectionURL, "someone_else"])
                #expect(notOurs.exitStatus == 64, "\(notOurs)")
                let missing = try await DBWatchRun.run(["slots", "drop", server.connectionURL, "dbwatch_missing"])
                #expect(missing.exitStatus == 1, "\(missing)")
                #expect(missing.stderr.contains("no replication slot is named dbwatch_missing"), "\(missing)")
                let elsewhere = try await DBWatchRun.run(["slots", "drop", server.connectionURL, "dbwatch_elsewhere"])
                #expect(elsewhere.exitStatus == 64, "\(elsewhere)")
                #expect(elsewhere.stderr.contains("connect to \(other)"), "\(elsewhere)")
                let there = try await DBWatchRun.run([
                    "slots", "drop", server.connectionURL(database: other), "dbwatch_elsewhere",
                ])
                #expect(there.exitStatus == 0, "\(there)")
                #expect(try await server.psql("SELECT slot_name FROM pg_replication_slots") == "someone_else")
            }
        }
    }

    @Test func aServerThatIsDownExits76AtOnce() async throws {
        try await withTimeout {
            try await withPostgresServer { server in
                try await server.stop()
                let list = try await DBWatchRun.run(["slots", "list", server.connectionURL], timeout: 30)
                #expect(list.exitStatus == 76, "\(list)")
                #expect(list.stderr.contains("cannot connect to \(server.connectionURL)"), "\(list)")
                #expect(list.stderr.contains("Connection refused"), "\(list)")
            }
        }
    }
}
