import DBWatch
import Foundation
import Hummingbird
import Synchronization

/// A leaderboard row.
struct Player: Codable, Hashable, Sendable {
    var id: Int
    var name: String
    var score: Int
}

/// The shared value: the round of the last write, and the ten best players
/// (about 400 bytes of JSON). The client finds `"round":` in each event.
struct Board: Codable, Hashable, Sendable {
    var round: Int
    var players: [Player]

    static let initial = Board(
        round: 0,
        players: (1...10).map { Player(id: $0, name: "player number \($0)", score: 1_000 - $0) })

    /// The query every client of `/board/events` shares.
    struct Query: Queryable {
        static var defaultValue: Board { Board(round: 0, players: []) }

        func fetch(_ db: Database) throws -> Board {
            let round = try db.fetchOne(Int.self, sql: "SELECT round FROM meta WHERE id = 1") ?? 0
            let players = try db.fetchAll(
                Player.self, sql: "SELECT id, name, score FROM player ORDER BY score DESC, id LIMIT 10")
            return Board(round: round, players: players)
        }
    }

    /// The baseline's event: this board with `round`, framed like DBWatch's
    /// (`id: version-digest`, `data: JSON`), encoded once per broadcast.
    func frame(round: Int) -> ByteBuffer {
        var board = self
        board.round = round
        let json = (try? JSONEncoder().encode(board)) ?? Data()
        var buffer = ByteBuffer()
        buffer.writeString("id: \(round)-\(String(UInt64(0x9e37_79b9_7f4a_7c15), radix: 16))\ndata: ")
        buffer.writeBytes(json)
        buffer.writeString("\n\n")
        return buffer
    }
}

/// One client's row: its round and a text (about 120 bytes of JSON).
struct Item: Codable, Hashable, Sendable {
    var id: Int
    var round: Int
    var text: String

    static func text(_ id: Int) -> String {
        "item \(id): " + String(repeating: "x", count: 64)
    }

    /// The query of one client of `/item/:id/events`: `WHERE id = ?`.
    struct Query: Queryable {
        static var defaultValue: Item { Item(id: 0, round: 0, text: "") }
        var id: Int

        func fetch(_ db: Database) throws -> Item {
            try db.fetchOne(Item.self, sql: "SELECT id, round, text FROM item WHERE id = ?", arguments: [id])
                ?? Item(id: id, round: -1, text: "")
        }
    }
}

/// The baseline's fan-out without DBWatch: each client has a stream holding
/// at most one pending frame (latest wins, as DBWatch's clients); a
/// broadcast yields the same bytes to every stream.
final class Broadcaster: Sendable {
    private struct State {
        var nextID = 0
        var current: ByteBuffer
        var clients: [Int: AsyncStream<ByteBuffer>.Continuation] = [:]
    }

    private let state: Mutex<State>
    private let sentCount = Atomic<Int>(0)

    init(first: ByteBuffer) {
        state = Mutex(State(current: first))
    }

    var count: Int { state.withLock { $0.clients.count } }
    var sent: Int { sentCount.load(ordering: .relaxed) }

    /// A new client, whose stream starts with the current frame.
    func subscribe() -> (Int, AsyncStream<ByteBuffer>) {
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.clients[id] = continuation
            continuation.yield(state.current)
            return id
        }
        return (id, stream)
    }

    func unsubscribe(_ id: Int) {
        state.withLock { $0.clients.removeValue(forKey: id) }?.finish()
    }

    func countSent() {
        sentCount.add(1, ordering: .relaxed)
    }

    func broadcast(_ frame: ByteBuffer) {
        let clients = state.withLock { state in
            state.current = frame
            return Array(state.clients.values)
        }
        for client in clients { client.yield(frame) }
    }
}

/// A response writer used by a child task (`baseline-task`).
final class WriterBox: @unchecked Sendable {
    // @unchecked: used by one task at a time: the child task's write loop
    // while the connection task awaits it, then the connection task alone.
    private var writer: any ResponseBodyWriter

    init(_ writer: any ResponseBodyWriter) {
        self.writer = writer
    }

    func write(_ buffer: ByteBuffer) async throws {
        try await writer.write(buffer)
    }

    func finish() async throws {
        let writer = writer
        try await writer.finish(nil)
    }
}
