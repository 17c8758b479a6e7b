import DBWatch
import Foundation

/// What one subscription of the sync protocol observes: a `Queryable`
/// request, the scope its clients share it in, and how its values become
/// keyed rows (for keyed changes) and whole JSON values.
///
/// An application's resolver turns a client's `subscribe` message (a query
/// name and parameters) into one:
///
/// ```swift
/// live.addSyncRoutes(to: router) { subscription, request, context in
///     switch subscription.query {
///     case "leaderboard": return .identifiable(TopPlayers(limit: Int(subscription.params["n"] ?? "") ?? 10))
///     default: throw LiveQueriesError.unknownQuery(subscription.query)
///     }
/// }
/// ```
///
/// Subscriptions of equal requests in equal scopes share one observation,
/// one computation of the changes per commit, and one history.
public struct SyncQuery: Sendable {
    let key: SubscriptionKey
    /// The request, for logs.
    let name: String
    /// Observes the request and hands each value, keyed, to `feed`.
    let run: @Sendable (_ live: LiveQueries, _ feed: SyncFeed) async -> Void

    /// A request whose values become keyed rows with `keyedRows` (`nil`:
    /// this value has no key, and goes out whole) and whole JSON values with
    /// `encode`.
    ///
    /// ```swift
    /// SyncQuery(Scores(), keyedRows: { try KeyedRows(identifying: $0) }, encode: LiveQueries.encodeJSON)
    /// ```
    ///
    /// - Parameters:
    ///   - request: The request observed.
    ///   - scope: Clients share the observation only within equal scopes
    ///     (a tenant, a user); `nil`: all clients.
    ///   - columns: The column names a snapshot lists (`serve`'s rows are
    ///     arrays of cells); `nil` for rows that are objects.
    ///   - keyedRows: The value's rows by key, in order; `nil` or a thrown
    ///     error when it has none (a repeated key): it goes out whole.
    ///   - encode: The whole value as JSON.
    public init<R: Queryable>(
        _ request: R, scope: (any Hashable & Sendable)? = nil, columns: [String]? = nil,
        keyedRows: @escaping @Sendable (R.Value) throws -> KeyedRows?,
        encode: @escaping @Sendable (R.Value) throws -> [UInt8]
    ) {
        self.init(
            request, scope: scope,
            keyed: { value in
                let rows = try? keyedRows(value)
                return SyncValue(rows: rows, columns: columns, encode: { try encode(value) })
            })
    }

    /// A request with its own columns per value (`dbwatch serve`'s results).
    package init<R: Queryable>(
        _ request: R, scope: (any Hashable & Sendable)?, keyed: @escaping @Sendable (R.Value) -> SyncValue
    ) {
        key = SubscriptionKey(request: AnyHashable(request), scope: scope.map { AnyHashable($0) })
        name = "\(request)"
        run = { live, feed in await feed.observe(request, in: live, keyed: keyed) }
    }

    /// A request whose value is a collection of `Identifiable` elements:
    /// keyed by their `id`, each row the element's JSON.
    ///
    /// ```swift
    /// SyncQuery.identifiable(TopPlayers(limit: 10))   // rows {"id":1,"name":"Arthur","score":100}, keys 1, 2, …
    /// ```
    public static func identifiable<R: Queryable>(_ request: R, scope: (any Hashable & Sendable)? = nil) -> SyncQuery
    where
        R.Value: RandomAccessCollection & Encodable, R.Value.Element: Identifiable & Encodable,
        R.Value.Element.ID: Encodable
    {
        SyncQuery(
            request, scope: scope, keyedRows: { try R.keyedRows(of: $0) }, encode: LiveQueries.encodeJSON)
    }

    /// A request whose values always go out whole (`"kind": "value"`).
    ///
    /// ```swift
    /// SyncQuery.wholeValues(PlayerCount())
    /// ```
    public static func wholeValues<R: Queryable>(_ request: R, scope: (any Hashable & Sendable)? = nil) -> SyncQuery
    where R.Value: Encodable {
        SyncQuery(request, scope: scope, keyedRows: { _ in nil }, encode: LiveQueries.encodeJSON)
    }
}

/// A client's `subscribe` message, as the application's resolver sees it
/// (see ``SyncQuery``).
public struct SyncSubscription: Sendable, Hashable {
    /// The query name the client asks for.
    public var query: String
    /// Its parameters, as strings, as in a query string.
    public var params: [String: String]

    /// A subscription of `query` with `params`.
    public init(query: String, params: [String: String] = [:]) {
        self.query = query
        self.params = params
    }
}
