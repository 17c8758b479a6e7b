import Foundation
import Testing

/// The sync protocol's routes (`GET /sync`, `POST /sync/SESSION`,
/// `GET /dbwatch.js`) over real sockets, as the page uses them.
@Suite("The sync protocol over HTTP")
struct SyncTests {
    /// A sync connection over server-sent events: its `hello`'s session,
    /// and its messages as JSON objects.
    struct Connection {
        let server: TestServer
        let events: EventReader
        let session: String

        init(_ server: TestServer) async throws {
            self.server = server
            events = try await EventReader(url: server.baseURL + "/sync")
            #expect(events.status == 200)
            #expect(events.contentType == "text/event-stream")
            let hello = try Self.object(try await events.next())
            #expect(hello["type"] as? String == "hello")
            #expect(hello["protocol"] as? Int == 1)
            session = try #require(hello["session"] as? String)
        }

        /// Posts a client message: the answer's status.
        func post(_ message: String) async throws -> Int {
            try await server.post("/sync/\(session)", json: message).status
        }

        /// The next batch's changes by subscription id, failing on any other message.
        func nextBatch() async throws -> [String: [String: Any]] {
            let message = try Self.object(try await events.next())
            #expect(message["type"] as? String == "batch", "\(message)")
            #expect(message["position"] is String)
            return try #require(message["changes"] as? [String: [String: Any]], "\(message)")
        }

        /// The next message, whatever its type.
        func nextMessage() async throws -> [String: Any] {
            try Self.object(try await events.next())
        }

        static func object(_ event: EventReader.Event) throws -> [String: Any] {
            let object = try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any]
            let message = try #require(object, "event \(event.name): \(event.data)")
            #expect(event.name == message["type"] as? String)
            return message
        }
    }

    /// The keys of a snapshot's rows, in order.
    static func snapshotKeys(_ entry: [String: Any]?) -> [String]? {
        (entry?["rows"] as? [[String: Any]])?.compactMap { $0["key"] as? String }
    }

    @Test("GET /dbwatch.js serves the JavaScript client")
    func javaScriptClient() async throws {
        try await withTimeout {
            try await TestServer.with { server in
                let answer = try await server.get("/dbwatch.js")
                #expect(answer.status == 200)
                #expect(answer.contentType?.hasPrefix("text/javascript") == true)
                #expect(answer.body.contains("export function connect("))
            }
        }
    }

    @Test("one connection: snapshots of both queries, then one batch per commit with the keyed change and the count")
    func oneBatchPerCommit() async throws {
        try await withTimeout {
            try await TestServer.with { server in
                let connection = try await Connection(server)
                #expect(
                    try await connection.post(
                        #"{"type":"subscribe","id":"top","query":"leaderboard","params":{"limit":"3"}}"#) == 202)
                #expect(try await connection.post(#"{"type":"subscribe","id":"count","query":"players"}"#) == 202)
                // The snapshots come in one batch or two, each subscription once.
                var first: [String: [String: Any]] = [:]
                while first.count < 2 {
                    for (id, entry) in try await connection.nextBatch() {
                        #expect(first[id] == nil, "\(id) listed twice before the commit")
                        first[id] = entry
                    }
                }
                #expect(first["top"]?["kind"] as? String == "snapshot")
                #expect(Self.snapshotKeys(first["top"]) == ["Arthur", "Barbara", "Craig"])
                let firstRow = (first["top"]?["rows"] as? [[String: Any]])?.first?["row"] as? [String: Any]
                #expect(firstRow?["name"] as? String == "Arthur")
                #expect(firstRow?["score"] as? Int == 100)
                #expect(first["count"]?["kind"] as? String == "value")
                #expect(first["count"]?["value"] as? Int == 4)

                // A new player in second place: one commit, one batch for both.
                #expect(try await server.post("/players/Erin/score", json: #"{"score": 90}"#).status == 200)
                let batch = try await connection.nextBatch()
                #expect(batch["count"]?["kind"] as? String == "value")
                #expect(batch["count"]?["value"] as? Int == 5)
                let top = try #require(batch["top"])
                #expect(top["kind"] as? String == "changes")
                #expect(top["delete"] as? [String] == ["Craig"])
                let upserts = try #require(top["upsert"] as? [[String: Any]])
                #expect(upserts.count == 1)
                #expect(upserts.first?["key"] as? String == "Erin")
                #expect(upserts.first?["index"] as? Int == 1)
                #expect((upserts.first?["row"] as? [String: Any])?["score"] as? Int == 90)
            }
        }
    }

    @Test(
        "a subscription the server does not serve is refused with its reason, and the connection stays",
        arguments: [
            (#"{"type":"subscribe","id":"x","query":"nope"}"#, 404, "unknownQuery"),
            (#"{"type":"subscribe","id":"x","query":"leaderboard","params":{"limit":"lots"}}"#, 400, "badRequest"),
            (#"{"type":"subscribe","id":"x","query":"leaderboard","params":{"limit":"101"}}"#, 400, "badRequest"),
        ])
    func refusedSubscription(message: String, status: Int, reason: String) async throws {
        try await withTimeout {
            try await TestServer.with { server in
                let connection = try await Connection(server)
                #expect(try await connection.post(message) == status)
                let error = try await connection.nextMessage()
                #expect(error["type"] as? String == "error")
                #expect(error["id"] as? String == "x")
                #expect((error["error"] as? [String: Any])?["reason"] as? String == reason)

                #expect(try await connection.post(#"{"type":"subscribe","id":"y","query":"players"}"#) == 202)
                #expect(try await connection.nextBatch()["y"]?["value"] as? Int == 4)
            }
        }
    }
}
