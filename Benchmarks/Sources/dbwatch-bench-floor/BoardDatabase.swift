import BenchProcess
import CSQLiteRaw
import Foundation
import NIOCore
import Synchronization

/// The board of `dbwatch-bench-server` in a WAL file database, on one
/// SQLite connection with prepared statements (the raw C API): the writes
/// of `POST /board/write/:round` and the fetch of the shared query.
final class BoardDatabase: @unchecked Sendable {
    // @unchecked: the connection and its statements are used under `lock` only.
    private let lock = Mutex(())
    private let connection: OpaquePointer
    private let begin: OpaquePointer
    private let commit: OpaquePointer
    private let updateRound: OpaquePointer
    private let updatePlayer: OpaquePointer
    private let selectRound: OpaquePointer
    private let selectPlayers: OpaquePointer
    private let fetchCount = Atomic<Int>(0)
    private let encoder: JSONEncoder

    init(path: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK,
            let handle
        else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw FloorError(description: "cannot open \(path): \(message)")
        }
        connection = handle
        let players = (1...10).map { "(\($0), 'player number \($0)', \(1_000 - $0))" }.joined(separator: ", ")
        try Self.execute(
            handle,
            """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY, round INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL);
            DELETE FROM meta; DELETE FROM player;
            INSERT INTO meta (id, round) VALUES (1, 0);
            INSERT INTO player (id, name, score) VALUES \(players);
            """)
        begin = try Self.prepare(handle, "BEGIN IMMEDIATE")
        commit = try Self.prepare(handle, "COMMIT")
        updateRound = try Self.prepare(handle, "UPDATE meta SET round = ? WHERE id = 1")
        updatePlayer = try Self.prepare(handle, "UPDATE player SET score = score + 1 WHERE id = ?")
        selectRound = try Self.prepare(handle, "SELECT round FROM meta WHERE id = 1")
        selectPlayers = try Self.prepare(
            handle, "SELECT id, name, score FROM player ORDER BY score DESC, id LIMIT 10")
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    var fetches: Int { fetchCount.load(ordering: .relaxed) }

    /// The write of `POST /board/write/:round`, in one transaction; returns
    /// `CLOCK_MONOTONIC` taken just before `COMMIT`, as `dbwatch-bench-server`.
    func write(round: Int) throws -> UInt64 {
        try lock.withLock { _ in
            try step(begin)
            sqlite3_bind_int64(updateRound, 1, Int64(round))
            do {
                try step(updateRound)
                sqlite3_bind_int64(updatePlayer, 1, Int64(round % 10 + 1))
                try step(updatePlayer)
            } catch {
                try? Self.execute(connection, "ROLLBACK")
                throw error
            }
            let time = nowNanoseconds()
            try step(commit)
            return time
        }
    }

    /// The shared query, fetched and encoded once: one buffer holding the
    /// SSE event (`id: round-digest`, `data: JSON`) inside its HTTP chunk.
    func fetchFrame() throws -> ByteBuffer {
        let board = try lock.withLock { _ in
            guard sqlite3_step(selectRound) == SQLITE_ROW else {
                sqlite3_reset(selectRound)
                throw FloorError(description: "no round")
            }
            let round = Int(sqlite3_column_int64(selectRound, 0))
            sqlite3_reset(selectRound)
            var players: [Player] = []
            players.reserveCapacity(10)
            while sqlite3_step(selectPlayers) == SQLITE_ROW {
                players.append(
                    Player(
                        id: Int(sqlite3_column_int64(selectPlayers, 0)),
                        name: String(cString: sqlite3_column_text(selectPlayers, 1)),
                        score: Int(sqlite3_column_int64(selectPlayers, 2))))
            }
            sqlite3_reset(selectPlayers)
            return Board(round: round, players: players)
        }
        fetchCount.add(1, ordering: .relaxed)
        let json = try encoder.encode(board)
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in json {
            digest ^= UInt64(byte)
            digest &*= 0x0000_0100_0000_01b3
        }
        let event = "id: \(board.round)-\(String(digest, radix: 16))\ndata: "
        let size = event.utf8.count + json.count + 2
        var buffer = ByteBuffer()
        buffer.reserveCapacity(size + 16)
        buffer.writeString("\(String(size, radix: 16))\r\n")
        buffer.writeString(event)
        buffer.writeBytes(json)
        buffer.writeString("\n\n\r\n")
        return buffer
    }

    private func step(_ statement: OpaquePointer) throws {
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard code == SQLITE_DONE || code == SQLITE_ROW else {
            throw FloorError(description: "SQLite: \(String(cString: sqlite3_errmsg(connection)))")
        }
    }

    private static func prepare(_ connection: OpaquePointer, _ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(connection, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw FloorError(description: "SQLite: \(String(cString: sqlite3_errmsg(connection)))")
        }
        return statement
    }

    private static func execute(_ connection: OpaquePointer, _ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(connection, sql, nil, nil, &error) == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(error)
            throw FloorError(description: "SQLite: \(message)")
        }
    }
}

/// The board's JSON, as `dbwatch-bench-server` encodes it.
struct Board: Encodable {
    var round: Int
    var players: [Player]
}

struct Player: Encodable {
    var id: Int
    var name: String
    var score: Int
}
