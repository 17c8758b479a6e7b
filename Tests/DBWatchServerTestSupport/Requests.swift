import DBWatch
import DBWatchDelivery
import DBWatchTestSupport
import Foundation
import Logging

/// A leaderboard row.
public struct Player: Codable, Hashable, Sendable {
    public var name: String
    public var score: Int

    public init(name: String, score: Int) {
        self.name = name
        self.score = score
    }
}

/// The leaderboard: the best `limit` players. Decodable, for WebSockets.
public struct TopPlayers: Queryable, Codable {
    public static var defaultValue: [Player] { [] }
    public var limit = 10

    public init(limit: Int = 10) {
        self.limit = limit
    }

    public func fetch(_ db: Database) throws -> [Player] {
        try db.fetchAll(
            Player.self, sql: "SELECT name, score FROM player ORDER BY score DESC, name LIMIT ?", arguments: [limit])
    }
}

/// A leaderboard row with its key: a player's name is unique.
public struct RankedPlayer: Codable, Hashable, Sendable, Identifiable {
    public var name: String
    public var score: Int
    public var id: String { name }

    public init(name: String, score: Int) {
        self.name = name
        self.score = score
    }
}

/// The best `limit` players as `Identifiable` elements: what the sync
/// protocol delivers as keyed changes.
public struct Leaderboard: Queryable {
    public static var defaultValue: [RankedPlayer] { [] }
    public var limit: Int

    public init(limit: Int = 10) {
        self.limit = limit
    }

    public func fetch(_ db: Database) throws -> [RankedPlayer] {
        try db.fetchAll(
            RankedPlayer.self, sql: "SELECT name, score FROM player ORDER BY score DESC, name LIMIT ?",
            arguments: [limit])
    }
}

/// How many players there are: a value without a key (whole values).
public struct PlayerCount: Queryable {
    public static var defaultValue: Int { 0 }

    public init() {}

    public func fetch(_ db: Database) throws -> Int {
        try db.fetchOne(Int.self, sql: "SELECT count(*) FROM player") ?? 0
    }
}

/// The leaderboard, unless `control.fail` is set: then it reads a table
/// that does not exist, a real SQLite error (code 1).
public struct CheckedPlayers: Queryable {
    public static var defaultValue: [Player] { [] }

    public init() {}

    public func fetch(_ db: Database) throws -> [Player] {
        let fail = try db.fetchOne(Int.self, sql: "SELECT fail FROM control") ?? 0
        if fail != 0 { _ = try db.fetchAll(Int.self, sql: "SELECT x FROM missing_table") }
        return try db.fetchAll(Player.self, sql: "SELECT name, score FROM player ORDER BY score DESC, name")
    }
}

/// The leaderboard as JSON written by hand, numbers as text: a value that
/// is not `Encodable` (see `JSONEncodedValue`).
public struct HandWrittenPlayers: Queryable {
    public static var defaultValue: PlayersJSON { PlayersJSON(text: "[]") }

    public init() {}

    public func fetch(_ db: Database) throws -> PlayersJSON {
        let rows = try db.fetchAll(
            sql: "SELECT name, score FROM player ORDER BY score DESC, name")
        let items = rows.map { row in
            "[\"\(String.fromDatabaseValue(row["name"] ?? .null) ?? "")\",\(row["score"] ?? .null)]"
        }
        return PlayersJSON(text: "[" + items.joined(separator: ",") + "]")
    }
}

/// JSON text, served as it is.
public struct PlayersJSON: JSONEncodedValue, Hashable {
    public var text: String

    public init(text: String) {
        self.text = text
    }

    public func encodedJSON() throws -> Data { Data(text.utf8) }
}

/// A large value: the text in `blob`, to fill a client's socket buffers.
public struct BigText: Queryable {
    public static var defaultValue: String { "" }

    public init() {}

    public func fetch(_ db: Database) throws -> String {
        try db.fetchOne(String.self, sql: "SELECT text FROM blob") ?? ""
    }
}

/// One user's todo titles, in order: a request scoped per user. Decodable,
/// for a WebSocket whose client sends it whole (and the route checks it).
public struct Todos: Queryable, Codable {
    public static var defaultValue: [String] { [] }
    public var owner: String
    public var limit = 10

    public init(owner: String, limit: Int = 10) {
        self.owner = owner
        self.limit = limit
    }

    /// `limit` may be left out.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        owner = try container.decode(String.self, forKey: .owner)
        limit = try container.decodeIfPresent(Int.self, forKey: .limit) ?? 10
    }

    public func fetch(_ db: Database) throws -> [String] {
        try db.fetchAll(
            String.self, sql: "SELECT title FROM todo WHERE owner = ? ORDER BY id LIMIT ?", arguments: [owner, limit])
    }
}

/// What a client of the per-user WebSocket sends: no owner, which the
/// route takes from the authenticated user.
public struct TodoFilter: Decodable, Sendable {
    public var limit = 10
}

public let testSchema = """
    CREATE TABLE player (name TEXT PRIMARY KEY, score INTEGER NOT NULL);
    CREATE TABLE control (fail INTEGER NOT NULL);
    INSERT INTO control (fail) VALUES (0);
    CREATE TABLE blob (text TEXT NOT NULL);
    INSERT INTO blob (text) VALUES ('');
    INSERT INTO player (name, score) VALUES ('arthur', 100), ('barbara', 80);
    CREATE TABLE todo (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, title TEXT NOT NULL);
    INSERT INTO todo (owner, title) VALUES ('alice', 'milk'), ('bob', 'bob''s secret'), ('alice', 'bread');
    """

extension DatabaseKind {
    /// A new database with ``testSchema``; a pool lives in a temporary file.
    /// The core logs through `logger` (failing observations at warning level).
    /// With `detectsExternalChanges`, other processes' commits (and a
    /// replaced file) are detected, polled every 50 ms.
    public func makeDatabase(logger: Logger? = nil, detectsExternalChanges: Bool = false) async throws
        -> any DatabaseWriter
    {
        var configuration = Configuration()
        if let logger { configuration.logger = logger }
        if detectsExternalChanges {
            configuration.externalChangeDetection = ExternalChangeDetection(pollInterval: .milliseconds(50))
        }
        let database: any DatabaseWriter
        switch self {
        case .inMemory:
            database = try DatabaseQueue(configuration: configuration)
        case .fileQueue, .pool:
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("DBWatchServerTests-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            database = try open(at: directory.appendingPathComponent("test.sqlite").path, configuration: configuration)
        }
        try await database.write { db in try db.execute(sql: testSchema) }
        return database
    }
}
