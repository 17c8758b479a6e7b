import AsyncHTTPClient
import Foundation
import Logging

/// A client of a DBWatch server's sync protocol: each query the server
/// serves is an `AsyncSequence` of the values its `Queryable` produces,
/// kept up to date by keyed changes over one connection.
///
/// ```swift
/// let client = SyncClient(baseURL: URL(string: "https://example.com/")!, token: token)
/// for try await players in client.values(of: "leaderboard", params: ["n": "10"], as: [Player].self) {
///     render(players)   // at once, then after every commit that changes the top 10
/// }
/// ```
///
/// All the sequences of one client share one connection (server-sent
/// events at `BASE/sync`, messages posted to `BASE/sync/SESSION`): what one
/// commit changes in several of them arrives in one batch, applied to all
/// of them at once. The connection opens when a first sequence starts and
/// closes when the last one ends. When it drops, the client reconnects
/// after a delay with backoff and jitter, and every subscription resumes
/// from its position: the server sends the changes it missed, or a
/// snapshot (a restarted server).
///
/// A sequence ends when its consuming task is cancelled, and all of them
/// when ``close()`` is called.
public final class SyncClient: Sendable {
    let connection: SyncConnection

    /// A client of the server at `baseURL`.
    ///
    /// ```swift
    /// let client = SyncClient(baseURL: URL(string: "http://127.0.0.1:8080/")!)
    /// ```
    ///
    /// - Parameters:
    ///   - baseURL: Where the server's `sync` endpoint is: `http://host/`
    ///     for `http://host/sync`, `https://host/api/` for
    ///     `https://host/api/sync`.
    ///   - token: A bearer token sent as `Authorization: Bearer TOKEN` with
    ///     every request, if the server asks for one.
    ///   - httpClient: The HTTP client (it is not shut down by the client).
    ///   - configuration: Reconnection delays, idle timeout, decoder.
    ///   - logger: Where the client logs its connection's life (debug
    ///     level); nothing by default.
    public init(
        baseURL: URL, token: String? = nil, httpClient: HTTPClient = .shared,
        configuration: SyncClientConfiguration = SyncClientConfiguration(),
        logger: Logger = Logger(label: "DBWatchClient", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        connection = SyncConnection(
            baseURL: baseURL, token: token, httpClient: httpClient, configuration: configuration, logger: logger)
    }

    /// The values of the served query `query` with `params`, decoded as
    /// `type`: the current value at once, then a new one after every commit
    /// that changes it. Throws the first error (``SyncValues/results``
    /// delivers errors as values instead).
    ///
    /// ```swift
    /// for try await players in client.values(of: "leaderboard", params: ["n": "10"], as: [Player].self) {
    ///     render(players)
    /// }
    /// ```
    ///
    /// Keyed queries (a collection of `Identifiable` elements on the
    /// server) arrive as keyed changes, applied to the rows the client
    /// keeps; the value is decoded from them, so `type` is the server's
    /// `Queryable.Value` (`[Player]`). A slow consumer gets the newest
    /// value: values it had no time for are skipped.
    ///
    /// - Parameters:
    ///   - query: The query's name, as the server serves it.
    ///   - params: Its parameters, as in a query string.
    ///   - type: The value's type.
    /// - Returns: The sequence; each iteration is one subscription.
    public func values<Value: Decodable & Sendable>(
        of query: String, params: [String: String] = [:], as type: Value.Type = Value.self
    ) -> SyncValues<Value> {
        SyncValues(connection: connection, query: query, params: params)
    }

    /// The updates of the served query `query` with `params`, one per
    /// batch that changes it: its position, the keyed changes (or
    /// snapshot, or whole value) it brought, and the result it gives.
    /// Every update is kept until it is consumed.
    ///
    /// ```swift
    /// for try await update in client.changes(of: "leaderboard", params: ["n": "10"]) {
    ///     for changes in update.changes { animate(changes.upserts) }
    ///     render(try update.decode([Player].self), at: update.position)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - query: The query's name, as the server serves it.
    ///   - params: Its parameters, as in a query string.
    /// - Returns: The sequence; each iteration is one subscription.
    public func changes(of query: String, params: [String: String] = [:]) -> SyncChanges {
        SyncChanges(connection: connection, query: query, params: params)
    }

    /// Ends every sequence of this client (they return `nil`) and closes
    /// its connection; returns once the connection's task has ended. Later
    /// sequences end at once.
    ///
    /// ```swift
    /// await client.close()
    /// ```
    public func close() async {
        await connection.close()
    }
}
