import DBWatch
import Hummingbird
import HummingbirdAuth
import HummingbirdWebSocket

/// Who a bearer token stands for: a player, by name.
public struct Viewer: Hashable, Sendable {
    /// The player's name.
    public var name: String

    /// The viewer who plays as `name`.
    public init(name: String) {
        self.name = name
    }
}

/// The server's request context: WebSockets, and the viewer that
/// `BearerTokenAuthenticator` found, if any.
public struct LeaderboardContext: AuthRequestContext, WebSocketRequestContext {
    /// Hummingbird's storage.
    public var coreContext: CoreRequestContextStorage
    /// The WebSocket upgrade's handler.
    public let webSocket: WebSocketHandlerReference<Self>
    /// The authenticated viewer.
    public var identity: Viewer?

    /// A context for a new request, without a viewer yet.
    public init(source: Source) {
        coreContext = .init(source: source)
        webSocket = .init()
        identity = nil
    }
}

/// The viewer's own line: their score and rank, or nothing before their
/// first score. The protected route `/me/events` builds it from the
/// authenticated viewer, never from the request.
public struct PlayerLine: Queryable {
    /// No line yet.
    public static var defaultValue: RankedPlayer? { nil }

    /// The player's name.
    public var name: String

    /// The line of `name`.
    public init(name: String) {
        self.name = name
    }

    /// Fetches the player's score and rank (1 for the best).
    public func fetch(_ db: Database) throws -> RankedPlayer? {
        try db.fetchOne(
            RankedPlayer.self,
            sql: """
                SELECT name, score, (SELECT count(*) FROM player AS other WHERE other.score > player.score) + 1 AS rank
                FROM player WHERE name = ?
                """,
            arguments: [name])
    }
}

/// A player's line with their rank.
public struct RankedPlayer: Codable, Hashable, Sendable {
    /// The player's name.
    public var name: String
    /// Their score.
    public var score: Int
    /// Their place, 1 for the best.
    public var rank: Int

    /// A player's line.
    public init(name: String, score: Int, rank: Int) {
        self.name = name
        self.score = score
        self.rank = rank
    }
}
